"""The console's typed fields of each step type, in place of a step's JSON config. Each type's `StepFields` makes its
form fields, builds from what was typed the one config dict the services take (`step_add`, `step_update`), fills
the fields in from a stored config, and names the field where a refusal at `config.<key>` is shown. Nothing is
checked here but what a field must parse (a number, a JSON body): the API's validators (`workflows.configs`) are the
only rules, so what the API takes can be typed and what it refuses is refused in the same words."""

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from accounts.models import Project
from contacts.selectors import event_names
from messaging.models import Template
from segments.conditions.spec import OPERATORS, UNITS
from segments.console import builder_fields
from workflows.configs import DELAY_UNITS, RECIPIENT_TYPES, SUBSCRIPTION_ACTIONS, WEBHOOK_METHODS
from workflows.models import StepType

# A wait's timeout is whole seconds in the API; the console offers the delay's units and seconds, which reach any.
TIMEOUT_UNITS = {"seconds": 1, **DELAY_UNITS}


class DatalistInput(forms.TextInput):
    """A text input suggesting `options` ((value, label) pairs) through a <datalist>, any text still accepted."""

    template_name = "admin/workflows/workflow/datalist_input.html"

    def __init__(self, options: list[tuple[str, str]], attrs=None):
        super().__init__(attrs={"autocomplete": "off", **(attrs or {})})
        self.options = options

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["attrs"]["list"] = f"{context['widget']['attrs']['id']}_options"
        context["widget"]["options"] = self.options
        return context


class HeaderLinesField(forms.CharField):
    """Request headers written one a line, `Name: value`, as a dict; the names and values are the API's to check."""

    widget = forms.Textarea(attrs={"rows": 3})

    def to_python(self, value) -> dict:
        headers = {}
        for line in (super().to_python(value) or "").splitlines():
            if not line.strip():
                continue
            name, colon, header_value = line.partition(":")
            if not colon:
                raise ValidationError(f"Write each header as Name: value (not “{line.strip()[:50]}”)")
            headers[name.strip()] = header_value.strip()
        return headers

    def prepare_value(self, value):
        return "\n".join(f"{name}: {text}" for name, text in value.items()) if isinstance(value, dict) else value


def _number(value: float | None) -> int | float | None:
    """A typed number as JSON writes it: 2, not 2.0."""
    return int(value) if value is not None and value.is_integer() else value


def _condition_value(text: str) -> Any:
    """A condition's value as typed: a number or true/false when the text spells one (as JSON does), else text."""
    try:
        parsed = json.loads(text, parse_constant=str)
    except ValueError:
        return text
    return parsed if isinstance(parsed, bool | int | float) else text


class StepFields:
    """One step type's typed fields. `at` maps a config key (the first part of a refusal's path after `config.`) to
    the field that shows the refusal; a longer key (`recipient.email`) wins over its start (`recipient`)."""

    step_type: str
    legend: str
    at: dict[str, str] = {}

    def fields(self, project: Project) -> dict[str, forms.Field]:
        raise NotImplementedError

    def config(self, values: dict) -> dict:
        raise NotImplementedError

    def initial(self, config: dict) -> dict:
        raise NotImplementedError

    def field_at(self, path: str) -> tuple[str, str] | None:
        """The field showing a refusal at `config.<path>`, and what of the path lies below that field's key."""
        for key in sorted(self.at, key=len, reverse=True):
            if path == key or path.startswith(key + "."):
                return self.at[key], path[len(key) + 1 :]
        return None


class SendEmailFields(StepFields):
    step_type = StepType.SEND_EMAIL
    legend = "Send an email"
    at = {"templateId": "email_template", "recipient": "email_recipient", "recipient.email": "email_address"}

    def fields(self, project):
        template = forms.ModelChoiceField(
            queryset=Template.objects.filter(project=project).order_by("name", "created_at"),
            required=False,
            label="Template",
            empty_label="Choose a template",
            help_text="One of this project's templates.",
        )
        template.label_from_instance = lambda found: found.name or str(found.pk)
        return {
            "email_template": template,
            "email_recipient": forms.ChoiceField(
                choices=list(zip(RECIPIENT_TYPES, ("The execution's contact", "Another address"), strict=True)),
                initial="CONTACT",
                required=False,
                label="To",
            ),
            "email_address": forms.CharField(
                required=False, label="Address", help_text="When the email goes to another address."
            ),
        }

    def config(self, values):
        config: dict = {}
        if values["email_template"] is not None:
            config["templateId"] = str(values["email_template"].pk)
        if values["email_recipient"]:
            config["recipient"] = {"type": values["email_recipient"]}
        if values["email_recipient"] == "CUSTOM":
            config["recipient"]["email"] = values["email_address"]
        return config

    def initial(self, config):
        recipient = config.get("recipient") or {}
        return {
            "email_template": config.get("templateId"),
            "email_recipient": recipient.get("type", "CONTACT"),
            "email_address": recipient.get("email", ""),
        }


class DelayFields(StepFields):
    step_type = StepType.DELAY
    legend = "Wait for a while"
    at = {"amount": "delay_amount", "unit": "delay_unit"}

    def fields(self, project):
        return {
            "delay_amount": forms.FloatField(required=False, label="For", help_text="At most 365 days."),
            "delay_unit": forms.ChoiceField(
                choices=[(unit, unit) for unit in DELAY_UNITS], initial="days", required=False, label="Unit"
            ),
        }

    def config(self, values):
        config = {"unit": values["delay_unit"]} if values["delay_unit"] else {}
        if values["delay_amount"] is not None:
            config["amount"] = _number(values["delay_amount"])
        return config

    def initial(self, config):
        return {"delay_amount": config.get("amount"), "delay_unit": config.get("unit", "days")}


class WaitForEventFields(StepFields):
    step_type = StepType.WAIT_FOR_EVENT
    legend = "Wait for an event"
    at = {"eventName": "wait_event_name", "timeout": "wait_timeout"}

    def fields(self, project):
        names = [(name, name) for name in event_names(project=project)]
        return {
            "wait_event_name": forms.CharField(
                required=False, label="Event", widget=DatalistInput(names), help_text="The event's name, as tracked."
            ),
            "wait_timeout": forms.FloatField(
                required=False,
                label="At most",
                help_text="Left empty, the wait has no end; with one, a TIMEOUT transition leads on when it is over.",
            ),
            "wait_timeout_unit": forms.ChoiceField(
                choices=[(unit, unit) for unit in TIMEOUT_UNITS], initial="days", required=False, label="Unit"
            ),
        }

    def config(self, values):
        config = {"eventName": values["wait_event_name"]} if values["wait_event_name"] else {}
        if values["wait_timeout"] is not None:
            # Without a unit, the API's: seconds.
            config["timeout"] = _number(
                values["wait_timeout"] * TIMEOUT_UNITS[values["wait_timeout_unit"] or "seconds"]
            )
        return config

    def initial(self, config):
        initial = {"wait_event_name": config.get("eventName", ""), "wait_timeout_unit": "days"}
        timeout = config.get("timeout")
        if timeout:
            # The largest unit the timeout is a whole number of: 2 days, not 172800 seconds.
            unit = next(unit for unit, seconds in reversed(TIMEOUT_UNITS.items()) if timeout % seconds == 0)
            initial.update(wait_timeout=timeout // TIMEOUT_UNITS[unit], wait_timeout_unit=unit)
        return initial


class ConditionFields(StepFields):
    """One filter of the segment condition language ({field, operator, value, unit}) on the contact or on the
    execution's context, not a tree: typed inputs, with the language's fields suggested and its operators listed."""

    step_type = StepType.CONDITION
    legend = "Branch on a condition"
    at = {key: f"condition_{key}" for key in ("field", "operator", "value", "unit")}

    def fields(self, project):
        suggested = [(found["field"], found["label"]) for found in builder_fields(project=project)]
        return {
            "condition_field": forms.CharField(
                required=False,
                label="Field",
                widget=DatalistInput(suggested),
                help_text="A contact field (email, data.plan), an event (event.purchase), email activity "
                "(email.opened), a segment (segment.<id>), or context.<path> (the execution's context).",
            ),
            "condition_operator": forms.ChoiceField(
                choices=[("", "Choose an operator"), *((operator, operator) for operator in OPERATORS)],
                required=False,
                label="Operator",
            ),
            "condition_value": forms.CharField(
                required=False,
                strip=False,
                label="Value",
                help_text="A number or true/false is read as one. Left empty for exists, triggered and the like.",
            ),
            "condition_value_text": forms.BooleanField(
                required=False, label="Value is text", help_text="Even if it reads as a number or true/false."
            ),
            "condition_unit": forms.ChoiceField(
                choices=[("", "none"), *((unit, unit) for unit in UNITS)],
                required=False,
                label="Unit",
                help_text="For within, olderThan and the triggered… operators (the value is then a count).",
            ),
        }

    def config(self, values):
        config = {
            key: values[f"condition_{key}"] for key in ("field", "operator", "unit") if values[f"condition_{key}"]
        }
        text, as_text = values["condition_value"], values["condition_value_text"]
        if text or as_text:
            config["value"] = text if as_text else _condition_value(text)
        return config

    def initial(self, config):
        value = config.get("value")
        return {
            "condition_field": config.get("field", ""),
            "condition_operator": config.get("operator", ""),
            "condition_value": "" if value is None else value if isinstance(value, str) else json.dumps(value),
            "condition_value_text": isinstance(value, str) and _condition_value(value) != value,
            "condition_unit": config.get("unit", ""),
        }


class WebhookFields(StepFields):
    step_type = StepType.WEBHOOK
    legend = "Call a webhook"
    at = {"url": "webhook_url", "method": "webhook_method", "headers": "webhook_headers", "body": "webhook_body"}

    def fields(self, project):
        return {
            "webhook_url": forms.CharField(
                required=False, label="URL", widget=forms.URLInput, help_text="Liquid may fill in any part of it."
            ),
            "webhook_method": forms.ChoiceField(
                choices=[(method, method) for method in WEBHOOK_METHODS], initial="POST", required=False, label="Method"
            ),
            "webhook_headers": HeaderLinesField(
                required=False, label="Headers", help_text="One a line, Name: value (Liquid in the values)."
            ),
            "webhook_body": forms.JSONField(
                required=False,
                label="Body",
                widget=forms.Textarea(attrs={"rows": 4}),
                help_text='A JSON object or array; its strings are rendered with Liquid: {"email": "{{ contact.email }}"}.',
            ),
        }

    def config(self, values):
        config = {"method": values["webhook_method"]} if values["webhook_method"] else {}
        if values["webhook_url"]:
            config["url"] = values["webhook_url"]
        if values["webhook_headers"]:
            config["headers"] = values["webhook_headers"]
        if values["webhook_body"] is not None:
            config["body"] = values["webhook_body"]
        return config

    def initial(self, config):
        return {
            "webhook_url": config.get("url", ""),
            "webhook_method": config.get("method", "POST"),
            "webhook_headers": config.get("headers") or {},
            "webhook_body": config.get("body"),
        }


class UpdateContactFields(StepFields):
    step_type = StepType.UPDATE_CONTACT
    legend = "Update the contact"
    at = {"updates": "update_data", "subscriptionAction": "update_subscription"}

    def fields(self, project):
        return {
            "update_data": forms.JSONField(
                required=False,
                label="Data",
                widget=forms.Textarea(attrs={"rows": 4}),
                help_text='A JSON object of the contact data to set, as the contacts API takes it: {"plan": "pro"} '
                "(null deletes a key).",
            ),
            "update_subscription": forms.ChoiceField(
                choices=list(zip(SUBSCRIPTION_ACTIONS, ("Leave it", "Subscribe", "Unsubscribe"), strict=True)),
                initial="none",
                required=False,
                label="Subscription",
            ),
        }

    def config(self, values):
        config = {"subscriptionAction": values["update_subscription"]} if values["update_subscription"] else {}
        if values["update_data"] is not None:
            config["updates"] = values["update_data"]
        return config

    def initial(self, config):
        return {"update_data": config.get("updates"), "update_subscription": config.get("subscriptionAction", "none")}


class ExitFields(StepFields):
    step_type = StepType.EXIT
    legend = "End the workflow"
    at = {"reason": "exit_reason"}

    def fields(self, project):
        return {
            "exit_reason": forms.CharField(
                required=False, strip=False, label="Reason", help_text="Recorded on the execution (optional)."
            )
        }

    def config(self, values):
        return {"reason": values["exit_reason"]} if values["exit_reason"] else {}

    def initial(self, config):
        return {"exit_reason": config.get("reason", "")}


STEP_FIELDS: dict[str, StepFields] = {
    kind.step_type: kind()
    for kind in (
        SendEmailFields,
        DelayFields,
        WaitForEventFields,
        ConditionFields,
        WebhookFields,
        UpdateContactFields,
        ExitFields,
    )
}
