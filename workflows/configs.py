"""Step configs: one validator per step type, each returning the config to store (known keys only, defaults
filled in) or raising 422 with every problem at its `config.<key>` path."""

import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email

from accounts.models import Project
from contacts.data_rules import data_size, validate_data
from core.errors import ValidationFailed
from core.json import json_type
from messaging.content import rendering
from messaging.models import Template
from segments.conditions import condition_validate
from workflows.models import StepType

MAX_DELAY_SECONDS = 365 * 24 * 3600
MAX_TIMEOUT_SECONDS = 31_536_000
DELAY_UNITS = {"minutes": 60, "hours": 3600, "days": 86400}
WEBHOOK_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
RECIPIENT_TYPES = ("CONTACT", "CUSTOM")
SUBSCRIPTION_ACTIONS = ("none", "subscribe", "unsubscribe")
MAX_BODY_BYTES = 64 * 1024
MAX_HEADER_VALUE = 998
# RFC 9110 token characters: a header name with anything else (a colon, a line break) could smuggle a header.
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
CONTEXT_PREFIX = "context."


class _Errors:
    def __init__(self):
        self.items: list[dict] = []

    def add(self, key: str, message: str, code: str = "custom", received: Any = None) -> None:
        entry = {"field": f"config.{key}" if key else "config", "message": message, "code": code}
        if received is not None:
            # What was sent: a string as it is, anything else by its JSON type.
            entry["received"] = received if isinstance(received, str) else json_type(received)
        self.items.append(entry)

    def required(self, config: dict, key: str) -> bool:
        """Record a missing or null `key`; true when it is there."""
        if config.get(key) is None:
            self.add(key, "Required", "invalid_type", "undefined" if key not in config else "null")
            return False
        return True

    def string(self, config: dict, key: str, *, max_length: int = 255) -> str | None:
        value = config[key]
        if not isinstance(value, str):
            self.add(key, "Expected string", "invalid_type", json_type(value))
        elif not value.strip():
            self.add(key, "Must not be empty", "too_small")
        elif len(value) > max_length:
            self.add(key, f"Must be at most {max_length} characters", "too_big")
        else:
            return value.strip()
        return None

    def liquid(self, key: str, source: str, *, html: bool = False) -> None:
        try:
            rendering.check_syntax(field=f"config.{key}", source=source, html=html)
        except ValidationFailed as refused:
            self.items.extend(refused.errors)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _send_email(config: dict, errors: _Errors, project: Project) -> dict:
    cleaned: dict = {}
    if errors.required(config, "templateId"):
        raw = config["templateId"]
        template_id = _uuid(raw)
        if not isinstance(raw, str):
            errors.add("templateId", "Expected string", "invalid_type", json_type(raw))
        elif template_id is None or not Template.objects.filter(project=project, id=template_id).exists():
            errors.add("templateId", f'Template "{raw}" was not found in this project', "custom", raw)
        else:
            cleaned["templateId"] = str(template_id)
    recipient = config.get("recipient")
    if recipient is None:
        cleaned["recipient"] = {"type": "CONTACT"}
    elif not isinstance(recipient, dict):
        errors.add("recipient", "Expected an object {type, email?}", "invalid_type", json_type(recipient))
    elif recipient.get("type", "CONTACT") not in RECIPIENT_TYPES:
        errors.add("recipient.type", "Expected one of: CONTACT, CUSTOM", "invalid_enum_value", recipient.get("type"))
    elif recipient.get("type") == "CUSTOM":
        email = recipient.get("email")
        if not isinstance(email, str) or not _is_email(email):
            errors.add("recipient.email", "A CUSTOM recipient needs a valid email address", "invalid_string")
        else:
            cleaned["recipient"] = {"type": "CUSTOM", "email": email.strip().lower()}
    else:
        cleaned["recipient"] = {"type": "CONTACT"}
    return cleaned


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _is_email(value: str) -> bool:
    try:
        validate_email(value.strip())
    except DjangoValidationError:
        return False
    return True


def _delay(config: dict, errors: _Errors, project: Project) -> dict:
    amount_ok = errors.required(config, "amount")
    unit_ok = errors.required(config, "unit")
    amount, unit = config.get("amount"), config.get("unit")
    if amount_ok and not _number(amount):
        errors.add("amount", "Expected number", "invalid_type", json_type(amount))
        amount_ok = False
    elif amount_ok and amount <= 0:
        errors.add("amount", "Must be greater than 0", "too_small")
        amount_ok = False
    if unit_ok and (not isinstance(unit, str) or unit not in DELAY_UNITS):
        errors.add("unit", "Expected one of: minutes, hours, days", "invalid_enum_value", unit)
        unit_ok = False
    if amount_ok and unit_ok and amount * DELAY_UNITS[unit] > MAX_DELAY_SECONDS:
        errors.add("amount", "A delay may be at most 365 days", "too_big")
    return {"amount": amount, "unit": unit}


def _wait_for_event(config: dict, errors: _Errors, project: Project) -> dict:
    cleaned: dict = {}
    if errors.required(config, "eventName"):
        cleaned["eventName"] = errors.string(config, "eventName")
    timeout = config.get("timeout")
    if timeout is not None:
        if not isinstance(timeout, int) or isinstance(timeout, bool):
            errors.add("timeout", "Expected an integer number of seconds", "invalid_type", json_type(timeout))
        elif not 1 <= timeout <= MAX_TIMEOUT_SECONDS:
            errors.add(
                "timeout",
                f"Must be 1 to {MAX_TIMEOUT_SECONDS:,} seconds (365 days)",
                "too_small" if timeout < 1 else "too_big",
            )
        else:
            cleaned["timeout"] = timeout
    return cleaned


def _condition(config: dict, errors: _Errors, project: Project) -> dict:
    """One filter of the segment condition language, checked by its own validator. A `context.<path>` field is
    checked as the same filter on `data.<path>`: context values follow the rules of contact data."""
    filter_ = {key: config[key] for key in ("field", "operator", "value", "unit") if key in config}
    field = filter_.get("field")
    checked = dict(filter_)
    if isinstance(field, str) and field.startswith(CONTEXT_PREFIX):
        checked["field"] = "data." + field.removeprefix(CONTEXT_PREFIX)
    try:
        condition_validate({"logic": "AND", "groups": [{"filters": [checked]}]}, path="config", project=project)
    except ValidationFailed as refused:
        for error in refused.errors:
            key = error["field"].removeprefix("config.groups.0.filters.0").lstrip(".")
            if key == "field" and error["code"] == "invalid_string":
                error = {**error, "message": error["message"] + ", or context.<path> (the execution's context)"}
            errors.items.append({**error, "field": f"config.{key}" if key else "config"})
    return filter_


def _webhook(config: dict, errors: _Errors, project: Project) -> dict:
    cleaned: dict = {"method": "POST"}
    if errors.required(config, "url"):
        url = errors.string(config, "url", max_length=2048)
        problem = webhook_url_problem(url) if url is not None else None
        if problem:
            errors.add("url", problem, "invalid_string")
        elif url is not None:
            errors.liquid("url", url)
            cleaned["url"] = url
    method = config.get("method")
    if method is not None:
        if method not in WEBHOOK_METHODS:
            errors.add("method", f"Expected one of: {', '.join(WEBHOOK_METHODS)}", "invalid_enum_value", method)
        else:
            cleaned["method"] = method
    headers = config.get("headers")
    if headers is not None:
        cleaned["headers"] = _headers(headers, errors)
    body = config.get("body")
    if body is not None:
        cleaned["body"] = _body(body, errors)
    return cleaned


def webhook_url_problem(url: str) -> str | None:
    """Why a webhook URL is refused, or None: a scheme other than http or https, a user-info part, no host. Checked
    on the URL as saved, and to be checked again on the URL as rendered, since Liquid may fill in any part."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "Not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "The URL must start with http:// or https://"
    if "@" in parts.netloc:
        return "The URL may not carry a user name or password (user-info); send credentials in a header"
    if not parts.hostname:
        return "The URL has no host"
    return None


def _headers(headers: Any, errors: _Errors) -> dict:
    if not isinstance(headers, dict):
        errors.add("headers", "Expected an object of header names to string values", "invalid_type", json_type(headers))
        return {}
    for name, value in headers.items():
        if not HEADER_NAME.fullmatch(name):
            errors.add(f"headers.{name}", "Not a valid header name", "invalid_string")
        elif not isinstance(value, str):
            errors.add(f"headers.{name}", "Expected string", "invalid_type", json_type(value))
        elif "\r" in value or "\n" in value or "\0" in value:
            errors.add(f"headers.{name}", "Must not contain line breaks or NUL characters", "invalid_string")
        elif len(value) > MAX_HEADER_VALUE:
            errors.add(f"headers.{name}", f"Must be at most {MAX_HEADER_VALUE} characters", "too_big")
        else:
            errors.liquid(f"headers.{name}", value)
    return headers


def _body(body: Any, errors: _Errors) -> Any:
    if not isinstance(body, dict | list):
        errors.add(
            "body", "Expected a JSON object or array (its strings are rendered)", "invalid_type", json_type(body)
        )
    elif data_size({"body": body}) > MAX_BODY_BYTES:
        errors.add("body", f"Must be at most {MAX_BODY_BYTES // 1024} KB of JSON", "too_big")
    else:
        for path, text in _strings(body, "body"):
            errors.liquid(path, text)
    return body


def _strings(value: Any, path: str):
    """(dotted path, string) of every string inside a JSON value."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}.{index}")


def _update_contact(config: dict, errors: _Errors, project: Project) -> dict:
    cleaned: dict = {}
    updates = config.get("updates")
    if updates is not None:
        try:
            cleaned["updates"] = validate_data(updates, field_name="config.updates")
        except ValidationFailed as refused:
            errors.items.extend(refused.errors)
    action = config.get("subscriptionAction", "none")
    if action not in SUBSCRIPTION_ACTIONS:
        errors.add("subscriptionAction", "Expected one of: none, subscribe, unsubscribe", "invalid_enum_value", action)
    else:
        cleaned["subscriptionAction"] = action
    if not errors.items and not cleaned.get("updates") and action == "none":
        errors.add("", "Give `updates` or a `subscriptionAction` other than none: the step would change nothing")
    return cleaned


def _exit(config: dict, errors: _Errors, project: Project) -> dict:
    reason = config.get("reason")
    if reason is None:
        return {}
    if not isinstance(reason, str):
        errors.add("reason", "Expected string", "invalid_type", json_type(reason))
    elif len(reason) > 500:
        errors.add("reason", "Must be at most 500 characters", "too_big")
    return {"reason": reason}


Validator = Callable[[dict, _Errors, Project], dict]
VALIDATORS: dict[str, Validator] = {
    StepType.SEND_EMAIL: _send_email,
    StepType.DELAY: _delay,
    StepType.WAIT_FOR_EVENT: _wait_for_event,
    StepType.CONDITION: _condition,
    StepType.WEBHOOK: _webhook,
    StepType.UPDATE_CONTACT: _update_contact,
    StepType.EXIT: _exit,
}


def step_config_clean(*, project: Project, step_type: str, config: Any) -> dict:
    """The config to store for a step of `step_type`, or 422 listing every problem at `config.<key>`."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ValidationFailed.field("config", "Expected object", "invalid_type", received=json_type(config))
    if step_type not in VALIDATORS:
        raise ValidationFailed.field(
            "type", f"Expected one of: {', '.join(VALIDATORS)}", "invalid_enum_value", received=step_type
        )
    errors = _Errors()
    cleaned = VALIDATORS[step_type](config, errors, project)
    if errors.items:
        raise ValidationFailed(errors.items)
    return cleaned
