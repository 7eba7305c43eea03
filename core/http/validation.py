"""Request validation: run an input serializer and turn its errors into the `errors[]` entries of the API's error
envelope (docs/api/README.md, "Errors").

Each entry is `{field, message, code, received?}` with `field` a dotted path (`to.2.email`) and `code` one of
the codes integrators already handle (`invalid_type`, `invalid_string`, `too_small`, `too_big`,
`invalid_enum_value`, `custom`).
"""

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.fields import SkipField, empty

from core.errors import ValidationFailed
from core.json import json_type

# DRF error code -> the API's validation code. `invalid` depends on the field: a string format check or a wrong JSON type.
_CODE_MAP = {
    "required": "invalid_type",
    "null": "invalid_type",
    "not_a_dict": "invalid_type",
    "not_a_list": "invalid_type",
    "blank": "too_small",
    "empty": "too_small",
    "min_length": "too_small",
    "min_value": "too_small",
    "max_length": "too_big",
    "max_value": "too_big",
    "max_string_length": "too_big",
    "invalid_choice": "invalid_enum_value",
    "invalid_string": "invalid_string",
    "invalid_type": "invalid_type",
    "reserved_event": "reserved_event",
}
_FORMAT_FIELDS = (
    serializers.EmailField,
    serializers.UUIDField,
    serializers.URLField,
    serializers.RegexField,
    serializers.DateTimeField,
    serializers.DateField,
    serializers.IPAddressField,
)


def _child(field, key):
    if field is None:
        return None
    if isinstance(field, serializers.ListSerializer | serializers.ListField):
        return field.child
    if isinstance(field, serializers.Serializer):
        return field.fields.get(key)
    if isinstance(field, serializers.DictField):
        return field.child
    return None


def _lookup(data: Any, path: list) -> tuple[bool, Any]:
    for key in path:
        if (isinstance(data, dict) and key in data) or (
            isinstance(data, list) and isinstance(key, int) and key < len(data)
        ):
            data = data[key]
        else:
            return False, None
    return True, data


def flatten_errors(detail: Any, field=None, data: Any = None, path: list | None = None) -> list[dict]:
    """Walk DRF's nested error detail beside the serializer fields and the input, depth first."""
    path = path or []
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            if key == "non_field_errors":
                out += flatten_errors(value, field, data, path)
            else:
                out += flatten_errors(value, _child(field, key), data, [*path, key])
        return out
    if isinstance(detail, list):
        if detail and all(isinstance(item, serializers.ErrorDetail | str) for item in detail):
            return [_entry(item, field, data, path) for item in detail]
        out = []
        for index, value in enumerate(detail):
            if value:
                out += flatten_errors(value, _child(field, index), data, [*path, index])
        return out
    return [_entry(detail, field, data, path)]


def _entry(detail, field, data, path) -> dict:
    drf_code = getattr(detail, "code", None) or "invalid"
    if drf_code == "invalid":
        code = "invalid_string" if isinstance(field, _FORMAT_FIELDS) else "invalid_type"
    else:
        code = _CODE_MAP.get(drf_code, "custom")
    entry = {"field": ".".join(str(part) for part in path), "message": str(detail), "code": code}
    if code == "invalid_type":
        present, value = _lookup(data, path)
        entry["received"] = json_type(value) if present else "undefined"
        if drf_code == "required":
            entry["message"] = "Required"
    return entry


# JSON types each field accepts. DRF coerces (5 -> "5", "yes" -> True); a JSON API should say the type is wrong.
_STRICT_TYPES = [
    (serializers.BooleanField, (bool,), "boolean"),
    (serializers.CharField, (str,), "string"),
    (serializers.ChoiceField, (str,), "string"),
    (serializers.UUIDField, (str,), "string"),
    (serializers.DateTimeField, (str,), "string"),
    (serializers.IntegerField, (int,), "integer"),
    (serializers.FloatField, (int, float), "number"),
    (serializers.DecimalField, (int, float), "number"),
]


def type_errors(field, value: Any, path: list) -> list[dict]:
    """Wrong JSON types under `field`, found before DRF gets the chance to coerce them."""
    if value is None:
        return []
    if isinstance(field, serializers.ListSerializer | serializers.ListField):
        if not isinstance(value, list):
            return []  # DRF reports not_a_list itself
        return [e for index, item in enumerate(value) for e in type_errors(field.child, item, [*path, index])]
    if isinstance(field, serializers.Serializer):
        if not isinstance(value, dict):
            return []
        return [
            e
            for name, child in field.fields.items()
            if not child.read_only and child.source != "*" and name in value
            for e in type_errors(child, value[name], [*path, name])
        ]
    for field_class, accepted, expected in _STRICT_TYPES:
        if isinstance(field, field_class):
            if (isinstance(value, bool) and bool not in accepted) or not isinstance(value, accepted):
                return [
                    {
                        "field": ".".join(str(part) for part in path),
                        "message": f"Expected {expected}, received {json_type(value)}",
                        "code": "invalid_type",
                        "received": json_type(value),
                    }
                ]
            return []
    return []


def validate(serializer_class, data: Any, *, context: dict | None = None, partial: bool = False) -> dict:
    """Validate `data` with `serializer_class`; return validated data or raise 422 VALIDATION_ERROR."""
    serializer = serializer_class(data=data, context=context or {}, partial=partial)
    wrong_types = type_errors(serializer, data, [])
    if wrong_types:
        raise ValidationFailed(wrong_types)
    if not serializer.is_valid():
        raise ValidationFailed(flatten_errors(serializer.errors, serializer, data))
    return serializer.validated_data


def validated_fields(serializer, data: Any) -> dict | None:
    """What `validate` returns for `data`, field by field with a bound `serializer` instance that is reused across
    requests, or None when `data` is not valid (the caller then lets `validate` report why). Each field runs its
    whole `run_validation` (its own `validators` included); what the serializer adds around its fields is not run,
    so a serializer with any of it must be refused up front by `check_validated_field_by_field`."""
    if not isinstance(data, dict) or type_errors(serializer, data, []):
        return None
    values = {}
    for name, field, skipped_when_absent in _field_plan(serializer):
        if skipped_when_absent and name not in data:
            continue
        try:
            values[name] = field.run_validation(field.get_value(data))
        except SkipField:
            continue
        except (serializers.ValidationError, DjangoValidationError):
            return None
    return values


def _field_plan(serializer) -> list[tuple[str, Any, bool]]:
    """The writable fields of a reused serializer, each with whether an absent value is simply left out: what DRF
    finds by raising SkipField from `validate_empty_values` for an optional field without a default, a third of the
    validation of a /v1/send that names four of its eleven fields. Only for fields that read their value by their
    name (`Field.get_value`), which is how a JSON object is read."""
    plan = serializer.__dict__.get("_herald_field_plan")
    if plan is None:
        plan = serializer.__dict__["_herald_field_plan"] = [
            (
                name,
                field,
                type(field).get_value is serializers.Field.get_value
                and field.field_name == name
                and not field.required
                and field.default is empty,
            )
            for name, field in serializer.fields.items()
            if not field.read_only
        ]
    return plan


# What DRF's Serializer runs around its fields (`run_validation` -> `to_internal_value`, `run_validators`,
# `validate`): a serializer class overriding any of it validates differently from `validated_fields`.
_SERIALIZER_STEPS = ("run_validation", "to_internal_value", "run_validators", "validate")


def check_validated_field_by_field(serializer) -> None:
    """Raise ImproperlyConfigured, naming the serializer and the hook, if `validated_fields` would accept what
    `validate` refuses or return other values: an object-level `validate()` or another override of the serializer's
    own steps, a `validate_<field>` method, serializer-level validators (`Meta.validators`), or a field written
    under another name (`source=`). Field `validators` and nested serializers run in full and are fine."""
    cls = type(serializer)
    name = f"{cls.__module__}.{cls.__qualname__}"
    for step in _SERIALIZER_STEPS:
        if getattr(cls, step) is not getattr(serializers.Serializer, step):
            raise ImproperlyConfigured(f"{name}.{step}() would be skipped when validating field by field")
    for field_name, field in serializer.fields.items():
        if callable(getattr(serializer, f"validate_{field_name}", None)):
            raise ImproperlyConfigured(
                f"{name}.validate_{field_name}() would be skipped when validating field by field"
            )
        if not field.read_only and field.source != field_name:
            raise ImproperlyConfigured(
                f"{name}.{field_name} is written as {field.source!r}, field by field validation keeps the field name"
            )
    if serializer.validators:
        raise ImproperlyConfigured(
            f"{name} validators {serializer.validators!r} would be skipped when validating field by field"
        )
