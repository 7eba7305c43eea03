"""The condition builder of the console (Django admin): a form field for a condition tree, its widget, and the
field list and error mapping the admin views share. Any admin form that takes a condition uses it.

Use::

    from segments.console import ConditionField, service_errors_to_form

    class AudienceForm(forms.ModelForm):
        def __init__(self, *args, project=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.fields["condition"] = ConditionField(project=project, required=False)

        def clean(self):
            ...
            try:
                the_service(..., condition=self.cleaned_data["condition"])
            except (ServiceError, DjangoValidationError) as exc:
                service_errors_to_form(self, exc, fields={"condition": "condition"})

- `ConditionField(project=..., segment_id=None)` parses the JSON, requires an object, and validates the tree with
  `condition_validate` against `project` (the API's validation); each error names its path inside the tree
  (`groups.0.filters.1.operator: ...`). With no project yet (an add form whose project is chosen on the same form),
  only the shape is checked there, and the service the form calls validates against the project.
- The widget is a JSON textarea, which is what a browser without JavaScript gets. `condition-builder.js` turns it
  into nested groups (AND/OR, add filter, add group, remove), a field select, an operator select holding only the
  operators of the field's kind, and a value input; it keeps the textarea's JSON in step and, debounced, asks the
  preview view "who matches?" to show "N contacts match" and the newest ten.
- The preview and field-list views are `SegmentAdmin`'s: `reverse("admin:segments_segment_condition_preview")`
  (POST JSON `{project, condition, segment?}`) and `reverse("admin:segments_segment_condition_fields")`
  (GET `?project=`); any page with the widget uses them, and a user needs the segment view permission.
- The project the builder works in is the widget's `project` (a page about one project) or, on a page where it is
  chosen on the form, the value of the input named by `project_input` (an id, `id_project` by default).
- `active_when=(name, value)`: the condition belongs to one choice of another field of the form (a DYNAMIC segment's
  `type`, a FILTERED campaign's `audience_type`, a select or radio buttons); under any other choice the builder
  hides its row and posts no condition.
"""

import json

from django import forms
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import Project
from contacts.selectors import STANDARD_FIELDS, contact_fields, event_names
from core.errors import ServiceError, ValidationFailed
from segments.conditions import condition_validate
from segments.conditions.spec import ACTIVITIES, DATE_FIELDS, FIELD_OPERATORS, NO_VALUE, UNITS, WITH_UNIT
from segments.models import Segment

# What the script needs of the language (segments/conditions/spec.py), so that it never holds its own copy.
LANGUAGE = {
    "operators": FIELD_OPERATORS,
    "noValue": list(NO_VALUE),
    "withUnit": list(WITH_UNIT),
    "units": list(UNITS),
    "dateFields": list(DATE_FIELDS),
    "activities": list(ACTIVITIES),
}


def _option(field: str, group: str, *, label: str = "", **extra) -> dict:
    return {"field": field, "label": label or field, "group": group, **extra}


def builder_fields(*, project: Project | None) -> list[dict]:
    """The fields the builder offers for `project`, as `{field, label, group, type}`: the contact fields of
    `GET /contacts/fields` (standard ones and the data keys in use), the project's events, email activity and the
    project's segments (labelled by name). Without a project, the fields every project has."""
    if project is None:
        known = [{"field": name, "type": kind} for name, kind in STANDARD_FIELDS.items()]
    else:
        known = contact_fields(project=project)
    fields = [
        _option(f["field"], "Data" if f["field"].startswith("data.") else "Contact", type=f["type"]) for f in known
    ]
    fields += [_option(f"email.{name}", "Email activity") for name in ACTIVITIES]
    if project is not None:
        fields += [_option(f"event.{name}", "Events") for name in event_names(project=project)]
        segments = Segment.objects.filter(project=project).order_by("name").values_list("id", "name")
        fields += [_option(f"segment.{pk}", "Segments", label=f"segment: {name}") for pk, name in segments]
    return fields


def _errors_at(errors: list[dict], root: str) -> list[str]:
    """Messages of a ValidationFailed's errors, each naming its path inside the tree (`root` stripped)."""
    messages = []
    for error in errors:
        path = str(error.get("field") or "")
        inside = path[len(root) + 1 :] if path.startswith(root + ".") else ("" if path == root else path)
        messages.append(f"{inside}: {error['message']}" if inside else error["message"])
    return messages


def service_errors_to_form(form: forms.Form, exc: Exception, *, fields: dict[str, str]) -> None:
    """Put a service's refusal on `form`, at the fields it names: `fields` maps the service's (API) field names to
    the form's (`{"condition": "condition", "trackMembership": "track_membership"}`); what names no mapped field is
    a form-wide error. Takes a ServiceError (ValidationFailed's field errors included) or a Django ValidationError
    from the model's `full_clean()`."""
    if isinstance(exc, ValidationError):
        for name, messages in (exc.message_dict if hasattr(exc, "error_dict") else {None: exc.messages}).items():
            form.add_error(name if name in form.fields else None, messages)
        return
    if not isinstance(exc, ServiceError):
        raise TypeError(f"not a service error: {exc!r}")
    if not exc.errors:
        form.add_error(None, exc.message)
        return
    for error in exc.errors:
        path = str(error.get("field") or "")
        root = path.split(".", 1)[0]
        target = fields.get(root)
        if target in form.fields:
            form.add_error(target, _errors_at([error], root))
        else:
            form.add_error(None, f"{path}: {error['message']}" if path else error["message"])


class ConditionWidget(forms.Textarea):
    template_name = "segments/condition_builder.html"

    class Media:
        css = {"all": ["segments/condition-builder.css"]}
        js = ["segments/condition-builder.js"]

    def __init__(
        self,
        attrs=None,
        *,
        project: Project | None = None,
        segment_id=None,
        project_input="id_project",
        active_when: tuple[str, str] | None = None,
    ):
        super().__init__(attrs={"rows": 8, "spellcheck": "false", **(attrs or {})})
        self.project, self.segment_id, self.project_input = project, segment_id, project_input
        self.active_when = active_when

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["builder"] = json.dumps(
            {
                **LANGUAGE,
                "fields": builder_fields(project=self.project),
                "project": str(self.project.pk) if self.project is not None else None,
                "projectInput": self.project_input,
                "activeWhen": dict(zip(("name", "value"), self.active_when, strict=True)) if self.active_when else None,
                "segment": str(self.segment_id) if self.segment_id else None,
                "previewUrl": reverse("admin:segments_segment_condition_preview"),
                "fieldsUrl": reverse("admin:segments_segment_condition_fields"),
            }
        )
        return context


class ConditionField(forms.JSONField):
    """A condition tree, validated by the condition language against `project` when it is known."""

    default_error_messages = {"not_a_tree": "Expected an object {logic, groups}."}

    def __init__(
        self,
        *,
        project: Project | None = None,
        segment_id=None,
        project_input="id_project",
        active_when: tuple[str, str] | None = None,
        **kwargs,
    ):
        self.project, self.segment_id = project, segment_id
        widget = ConditionWidget(
            project=project, segment_id=segment_id, project_input=project_input, active_when=active_when
        )
        kwargs.setdefault("help_text", "Build it with the controls, or write the JSON tree (docs: segments).")
        super().__init__(widget=widget, **kwargs)

    def prepare_value(self, value):
        # Indented, so that the JSON reads as a tree where a person edits it by hand.
        if value is None or isinstance(value, forms.fields.InvalidJSONInput):
            return value or ""
        return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)

    def validate(self, value):
        super().validate(value)
        if value in self.empty_values:
            return
        if not isinstance(value, dict):
            raise ValidationError(self.error_messages["not_a_tree"], code="not_a_tree")
        if self.project is not None:
            try:
                condition_validate(value, project=self.project, segment_id=self.segment_id)
            except ValidationFailed as exc:
                raise ValidationError(_errors_at(exc.errors, "condition")) from exc
