// The campaign composer's live panel: as the operator types, the subject and body are rendered for the chosen
// contact and the audience is counted, by the admin's own endpoints (the same renderer and audience as sending).
// Without this script the Preview button posts the form to the same endpoint and opens its answer as a page.
(function () {
  "use strict";
  const panel = document.getElementById("composer");
  const form = panel && panel.closest("form");
  if (!form) return;
  const CONTENT = ["subject", "body", "preview_contact"];
  const AUDIENCE = ["type", "audience_type", "segment", "audience_condition"];
  const $ = (id) => document.getElementById(id);

  function debounce(call, ms) {
    let timer;
    return () => {
      clearTimeout(timer);
      timer = setTimeout(call, ms);
    };
  }

  // Answers may come back out of order: only the latest request's answer is shown.
  function latest(url, show) {
    let asked = 0;
    return () => {
      const mine = ++asked;
      fetch(url, { method: "POST", body: new FormData(form), headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then((response) => response.json())
        .then((answer) => { if (mine === asked) show(answer); })
        .catch(() => { if (mine === asked) show({ errors: [{ field: null, message: "The preview could not be reached" }] }); });
    };
  }

  function listErrors(errors) {
    const list = $("composer-errors");
    list.replaceChildren(...errors.map((error) => {
      const item = document.createElement("li");
      item.textContent = `${error.field || "message"}: ${error.message}`;
      return item;
    }));
  }

  const preview = debounce(latest(panel.dataset.previewUrl, (answer) => {
    listErrors(answer.errors || []);
    $("composer-subject").textContent = answer.subject || "";
    $("composer-frame").srcdoc = answer.html || "";
  }), 400);

  const count = debounce(latest(panel.dataset.recipientsUrl, (answer) => {
    const line = $("composer-recipients");
    if (answer.recipients === null || answer.recipients === undefined) {
      line.textContent = "Recipients: " + (answer.errors || []).map((e) => `${e.field || "audience"}: ${e.message}`).join("; ");
    } else {
      line.textContent = `Recipients now: ${answer.recipients} (as typed, counted as sending counts it)`;
    }
  }), 400);

  // Only the rows of the chosen audience type are shown.
  function showAudienceRows() {
    const chosen = form.querySelector("input[name=audience_type]:checked");
    const type = chosen ? chosen.value : "ALL";
    const segment = form.querySelector(".field-segment");
    const condition = form.querySelector(".field-audience_condition");
    if (segment) segment.hidden = type !== "SEGMENT";
    if (condition) condition.hidden = type !== "FILTERED";
  }

  function changed(event) {
    const name = event.target.name;
    if (CONTENT.includes(name)) preview();
    // The condition builder's own controls have no names: what they change is the audience's condition.
    if (AUDIENCE.includes(name) || event.target.closest(".field-audience_condition")) count();
    if (name === "audience_type") showAudienceRows();
  }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  // Enter in the contact field previews instead of submitting the form.
  $("id_preview_contact").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      preview();
    }
  });
  showAudienceRows();
  preview();
  count();
})();
