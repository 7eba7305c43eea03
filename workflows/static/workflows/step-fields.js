// The add-a-step form: shows only the fieldset of the chosen step type. Without JavaScript every type's fieldset
// is shown under its heading, and the server reads only the chosen type's.
document.addEventListener("DOMContentLoaded", () => {
  const type = document.querySelector("select[name=step_type]");
  if (!type) return;
  const show = () => {
    for (const group of document.querySelectorAll("fieldset[data-step-type]")) {
      group.hidden = group.dataset.stepType !== type.value;
    }
  };
  type.addEventListener("change", show);
  show();
});
