// The condition builder (segments/console.py): turns a condition's JSON textarea into nested groups of filters,
// keeps the textarea's JSON in step (it is what the form posts), and shows who matches, live. Without this script
// the textarea is the field. The language (operators per field kind, units) comes from the server's spec.
"use strict";
(function () {
  const PREVIEW_DELAY_MS = 400;
  const OTHER = "__other";
  const MAX_DEPTH = 10;
  const STARTER = { logic: "AND", groups: [{ filters: [{ field: "email", operator: "contains", value: "" }] }] };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function isTree(node) {
    return node !== null && typeof node === "object" && !Array.isArray(node) && Array.isArray(node.groups);
  }

  function Builder(root) {
    const config = JSON.parse(root.dataset.builder);
    const textarea = root.querySelector("textarea");
    const name = textarea.name;
    let tree;
    try {
      tree = textarea.value.trim() ? JSON.parse(textarea.value) : structuredClone(STARTER);
    } catch (error) {
      tree = null;
    }
    if (!isTree(tree)) return; // leave a tree the controls cannot show to the textarea
    const typed = new WeakSet(); // filters whose field is typed in ("Other field…")
    const controls = el("div", { class: "cb-tree" });
    const status = el("p", { class: "cb-count", role: "status" });
    const sample = el("ul", { class: "cb-sample", "aria-label": "Newest matching contacts" });
    const json = el("details", { class: "cb-json" }, el("summary", {}, "Edit as JSON"));
    textarea.replaceWith(controls, el("div", { class: "cb-preview" }, status, sample), json);
    json.append(textarea);
    let timer = null;
    let asked = 0;

    // --- the language -------------------------------------------------------------------------------------------
    function kindOf(field) {
      if (field === "email" || field === "subscribed") return field;
      if (config.dateFields.includes(field)) return "date";
      if (field.startsWith("data.") && field.length > 5) return "data";
      if (field.startsWith("email.")) return config.activities.includes(field.slice(6)) ? "activity" : null;
      if (field.startsWith("segment.") && field.length > 8) return "segment";
      if (field.startsWith("event.") && field.length > 6) return "event";
      return null;
    }
    function known(field) {
      return config.fields.find((f) => f.field === field);
    }
    function typeOf(field) {
      const found = known(field);
      return found ? found.type : undefined;
    }
    // Keep a filter valid for its field's kind: an operator of that kind, and the value the operator takes.
    function fit(filter) {
      const operators = config.operators[kindOf(filter.field)] || [];
      if (operators.length && !operators.includes(filter.operator)) filter.operator = operators[0];
      if (config.noValue.includes(filter.operator)) {
        delete filter.value;
        delete filter.unit;
      } else if (config.withUnit.includes(filter.operator)) {
        if (!Number.isInteger(filter.value) || filter.value < 1) filter.value = 1;
        if (!config.units.includes(filter.unit)) filter.unit = config.units[0];
      } else {
        delete filter.unit;
        const wantsBoolean = kindOf(filter.field) === "subscribed" || typeOf(filter.field) === "boolean";
        if (wantsBoolean && ["equals", "notEquals"].includes(filter.operator)) {
          if (typeof filter.value !== "boolean") filter.value = true;
        } else if (filter.value === undefined || typeof filter.value === "boolean") {
          filter.value = "";
        }
      }
    }
    function readValue(filter, text) {
      const numeric = /^-?[0-9]+(\.[0-9]+)?$/.test(text.trim());
      return typeOf(filter.field) === "number" && numeric ? Number(text) : text;
    }

    // --- rendering ----------------------------------------------------------------------------------------------
    function id(path, part) {
      return `cb-${name}-${path || "root"}-${part}`.replace(/[^A-Za-z0-9_-]/g, "-");
    }
    function button(text, label, onclick) {
      return el("button", { type: "button", class: "button cb-button", "aria-label": label, onclick }, text);
    }
    function at(path, part) {
      return path ? `${path}.${part}` : part;
    }

    function renderCondition(node, path, depth, where) {
      const logicId = id(path, "logic");
      return el(
        "div",
        { class: "cb-condition", role: "group", "aria-label": where },
        el(
          "p",
          { class: "cb-logic" },
          el("label", { for: logicId }, "Match contacts in "),
          el(
            "select",
            { id: logicId, onchange: (e) => ((node.logic = e.target.value), change(false)) },
            el("option", { value: "AND", selected: node.logic === "AND" }, "all groups (AND)"),
            el("option", { value: "OR", selected: node.logic === "OR" }, "any group (OR)"),
          ),
        ),
        node.groups.map((group, index) =>
          renderGroup(node, group, at(path, `groups.${index}`), index, depth, where),
        ),
        button("Add group", `Add group to ${where.toLowerCase()}`, () => {
          node.groups.push({ filters: [newFilter()] });
          change(true, id(at(path, `groups.${node.groups.length - 1}.filters.0`), "field"));
        }),
      );
    }

    function renderGroup(parent, group, path, index, depth, where) {
      const title = `Group ${index + 1} of ${where.toLowerCase()}`;
      const filters = Array.isArray(group.filters) ? group.filters : (group.filters = []);
      const nested = isTree(group.conditions)
        ? el(
            "div",
            { class: "cb-nested" },
            renderCondition(group.conditions, `${path}.conditions`, depth + 1, `Nested condition of ${title.toLowerCase()}`),
            button("Remove nested condition", `Remove nested condition of ${title.toLowerCase()}`, () => {
              delete group.conditions;
              change(true, id(path, "add-filter"));
            }),
          )
        : null;
      return el(
        "div",
        { class: "cb-group", role: "group", "aria-label": title, "data-path": path },
        el("p", { class: "cb-group-title" }, `${title}: contacts matching all of`),
        filters.map((filter, i) => renderFilter(group, filter, `${path}.filters.${i}`, i, title)),
        nested,
        el(
          "p",
          { class: "cb-actions" },
          el(
            "button",
            {
              type: "button",
              class: "button cb-button",
              id: id(path, "add-filter"),
              "aria-label": `Add filter to ${title.toLowerCase()}`,
              onclick: () => {
                filters.push(newFilter());
                change(true, id(`${path}.filters.${filters.length - 1}`, "field"));
              },
            },
            "Add filter",
          ),
          nested || depth >= MAX_DEPTH
            ? null
            : button("Add nested group", `Add nested group to ${title.toLowerCase()}`, () => {
                group.conditions = { logic: "AND", groups: [{ filters: [newFilter()] }] };
                change(true, id(`${path}.conditions.groups.0.filters.0`, "field"));
              }),
          button("Remove group", `Remove ${title.toLowerCase()}`, () => {
            parent.groups.splice(index, 1);
            change(true);
          }),
        ),
      );
    }

    function fieldSelect(filter, path, label) {
      const other = typed.has(filter) || !known(filter.field);
      const groups = new Map();
      for (const f of config.fields) {
        if (!groups.has(f.group)) groups.set(f.group, []);
        groups.get(f.group).push(el("option", { value: f.field, selected: !other && f.field === filter.field }, f.label));
      }
      const select = el(
        "select",
        {
          id: id(path, "field"),
          "aria-label": `Field of ${label}`,
          onchange: (e) => {
            if (e.target.value === OTHER) {
              typed.add(filter);
              filter.field = "data.";
            } else {
              typed.delete(filter);
              filter.field = e.target.value;
            }
            fit(filter);
            change(true, e.target.value === OTHER ? id(path, "field-name") : id(path, "field"));
          },
        },
        [...groups].map(([group, options]) => el("optgroup", { label: group }, options)),
        el("option", { value: OTHER, selected: other }, "Other field…"),
      );
      if (!other) return [select];
      const nameInput = el("input", {
        type: "text",
        id: id(path, "field-name"),
        class: "cb-field-name",
        value: filter.field,
        "aria-label": `Field name of ${label} (data.<key>, event.<name>, email.opened…)`,
        onchange: (e) => {
          filter.field = e.target.value.trim();
          fit(filter);
          change(true, id(path, "operator"));
        },
      });
      return [select, nameInput];
    }

    function valueControls(filter, path, label) {
      if (config.noValue.includes(filter.operator)) return [];
      if (config.withUnit.includes(filter.operator)) {
        return [
          el("input", {
            type: "number",
            min: 1,
            step: 1,
            id: id(path, "value"),
            class: "cb-number",
            value: filter.value,
            "aria-label": `Amount of ${label}`,
            oninput: (e) => ((filter.value = Number(e.target.value)), change(false)),
          }),
          el(
            "select",
            { id: id(path, "unit"), "aria-label": `Unit of ${label}`, onchange: (e) => ((filter.unit = e.target.value), change(false)) },
            config.units.map((unit) => el("option", { value: unit, selected: unit === filter.unit }, unit)),
          ),
        ];
      }
      if (typeof filter.value === "boolean") {
        return [
          el(
            "select",
            {
              id: id(path, "value"),
              "aria-label": `Value of ${label}`,
              onchange: (e) => ((filter.value = e.target.value === "true"), change(false)),
            },
            el("option", { value: "true", selected: filter.value }, "true"),
            el("option", { value: "false", selected: !filter.value }, "false"),
          ),
        ];
      }
      return [
        el("input", {
          type: "text",
          id: id(path, "value"),
          class: "cb-value",
          value: filter.value === undefined ? "" : String(filter.value),
          placeholder: kindOf(filter.field) === "date" ? "YYYY-MM-DD" : null,
          "aria-label": `Value of ${label}`,
          oninput: (e) => ((filter.value = readValue(filter, e.target.value)), change(false)),
        }),
      ];
    }

    function renderFilter(group, filter, path, index, title) {
      const label = `filter ${index + 1} of ${title.toLowerCase()}`;
      const operators = [...(config.operators[kindOf(filter.field)] || [])];
      // An operator the field does not take (from the JSON) stays shown, so that its error has something to name.
      if (filter.operator && !operators.includes(filter.operator)) operators.push(filter.operator);
      return el(
        "div",
        { class: "cb-filter", "data-path": path },
        fieldSelect(filter, path, label),
        el(
          "select",
          {
            id: id(path, "operator"),
            "aria-label": `Operator of ${label}`,
            onchange: (e) => ((filter.operator = e.target.value), fit(filter), change(true, id(path, "operator"))),
          },
          operators.map((op) => el("option", { value: op, selected: op === filter.operator }, op)),
        ),
        valueControls(filter, path, label),
        button("Remove", `Remove ${label}`, () => {
          group.filters.splice(index, 1);
          change(true);
        }),
        el("p", { class: "cb-error", id: id(path, "error"), hidden: true }),
      );
    }

    function newFilter() {
      const filter = { field: "email", operator: "contains", value: "" };
      fit(filter);
      return filter;
    }

    function render(focusId) {
      controls.replaceChildren(renderCondition(tree, "", 1, "Condition"));
      const target = focusId && document.getElementById(focusId);
      if (target) target.focus();
    }

    // --- keeping the JSON, and who matches ----------------------------------------------------------------------
    function change(structural, focusId) {
      textarea.value = JSON.stringify(tree, null, 2);
      if (structural) render(focusId);
      schedulePreview();
    }

    function projectId() {
      if (config.project) return config.project;
      const input = document.getElementById(config.projectInput);
      return input ? input.value.trim() : "";
    }

    function schedulePreview() {
      clearTimeout(timer);
      timer = setTimeout(preview, PREVIEW_DELAY_MS);
    }

    function showErrors(errors) {
      status.textContent = "This condition cannot be counted yet:";
      for (const error of errors) {
        const path = String(error.field || "").replace(/^condition\.?/, "");
        sample.append(el("li", { class: "cb-error" }, path ? `${path}: ${error.message}` : error.message));
        const row = path && [...controls.querySelectorAll("[data-path]")].reverse().find((node) => `${path}.`.startsWith(`${node.dataset.path}.`));
        const message = row && row.querySelector(":scope > .cb-error");
        if (message) {
          message.textContent = error.message;
          message.hidden = false;
        }
      }
    }

    async function preview() {
      const project = projectId();
      for (const message of controls.querySelectorAll(".cb-error")) message.hidden = true;
      sample.replaceChildren();
      if (!project) {
        status.textContent = "Choose a project to see who matches.";
        return;
      }
      const mine = ++asked;
      status.textContent = "Counting…";
      const token = document.querySelector("[name=csrfmiddlewaretoken]");
      let answer;
      try {
        const response = await fetch(config.previewUrl, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-CSRFToken": token ? token.value : "" },
          body: JSON.stringify({ project, condition: tree, segment: config.segment }),
          credentials: "same-origin",
        });
        answer = await response.json();
      } catch (error) {
        answer = { errors: [{ message: "The count could not be fetched; saving still validates the condition." }] };
      }
      if (mine !== asked) return; // a later change asked again
      if (answer.errors) {
        showErrors(answer.errors);
        return;
      }
      status.textContent = `${answer.count} ${answer.count === 1 ? "contact matches" : "contacts match"}`;
      sample.replaceChildren(...answer.sample.map((contact) => el("li", {}, contact.email)));
    }

    async function loadFields() {
      const project = projectId();
      if (!project) return;
      try {
        const response = await fetch(`${config.fieldsUrl}?project=${encodeURIComponent(project)}`, { credentials: "same-origin" });
        if (response.ok) config.fields = (await response.json()).fields;
      } catch (error) {
        return; // keep the fields every project has
      }
      render();
      schedulePreview();
    }

    // A hand edit of the JSON redraws the controls, once the typing pauses on a tree they can show.
    let editing = null;
    textarea.addEventListener("input", () => {
      clearTimeout(editing);
      editing = setTimeout(() => {
        let edited = null;
        try {
          edited = JSON.parse(textarea.value);
        } catch (error) {
          status.textContent = "The JSON does not parse yet; the controls show the last tree that did.";
          return;
        }
        if (!isTree(edited)) return;
        tree = edited;
        render();
        preview();
      }, PREVIEW_DELAY_MS);
    });

    // On a form where the project is chosen, the fields offered are that project's.
    const projectInput = !config.project && document.getElementById(config.projectInput);
    if (projectInput) projectInput.addEventListener("change", loadFields);

    // A condition of one choice on its form (a DYNAMIC segment, a FILTERED audience): under any other choice the
    // builder steps aside and posts nothing.
    const when = config.activeWhen;
    const row = root.closest(".form-row") || root;
    function chosen() {
      const inputs = [...textarea.form.elements].filter((input) => input.name === when.name);
      const input = inputs.find((each) => each.type !== "radio" || each.checked);
      return input ? input.value : "";
    }
    function followChoice() {
      const active = !when || chosen() === when.value;
      row.hidden = !active;
      textarea.value = active ? JSON.stringify(tree, null, 2) : "";
    }
    if (when) {
      textarea.form.addEventListener("change", (event) => {
        if (event.target.name === when.name) followChoice();
      });
    }

    render();
    followChoice();
    if (projectInput && projectInput.value.trim()) loadFields();
    else schedulePreview();
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const root of document.querySelectorAll(".condition-builder")) Builder(root);
  });
})();
