"""The condition language as OpenAPI components, built from its spec: a `Condition` (logic and groups), its groups
(filters and an optional nested `Condition`, the recursion) and a filter, a union discriminated by its operator
(a value, a value with a unit, or neither). The validator (`segments.conditions.validation`) decides what is
accepted; these say the same to a client, except what a schema cannot: the nesting limit, which operators a field
takes and the field-specific value types (a 422 with the path says so)."""

import copy

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

from segments.conditions.spec import (
    ACTIVITIES,
    DATE_FIELDS,
    LOGICS,
    MAX_DEPTH,
    NO_VALUE,
    OPERATORS,
    UNITS,
    WITH_UNIT,
)

# The field forms of `spec.parse_field`: a data path's keys are non-empty and carry no double quote or backslash.
DATA_PATH = r'[^."\\]+(\.[^."\\]+)*'
FIELD_PATTERN = (
    rf"^(email|subscribed|{'|'.join(DATE_FIELDS)}|email\.({'|'.join(ACTIVITIES)})"
    rf"|data\.{DATA_PATH}|(event|segment)\..+)$"
)
FIELD = {
    "type": "string",
    "pattern": FIELD_PATTERN,
    "description": "email, subscribed, createdAt, updatedAt, data.<path>, event.<name>, email.<activity> "
    "(sent, delivered, opened, clicked, bounced, complained) or segment.<segmentId>",
}
VALUE_OPERATORS = [operator for operator in OPERATORS if operator not in NO_VALUE and operator not in WITH_UNIT]


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def filter_components(prefix: str, field: dict) -> dict[str, dict]:
    """`<prefix>Filter`, one filter whose `field` is `field`: a union discriminated by its operator, of
    `<prefix>ValueFilter`, `<prefix>AgeFilter` and `<prefix>PresenceFilter`."""

    def one(operators: list[str], description: str, **properties) -> dict:
        return {
            "type": "object",
            "description": description,
            "required": ["field", "operator", *properties],
            "properties": {"field": field, "operator": {"type": "string", "enum": operators}, **properties},
        }

    kinds = {
        f"{prefix}ValueFilter": one(
            VALUE_OPERATORS,
            "Compares the field with `value`: a boolean for subscribed, a date (YYYY-MM-DD) or ISO 8601 date-time "
            "for createdAt and updatedAt, a number (or a string that spells one) for the comparisons, else a string",
            value={"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]},
        ),
        f"{prefix}AgeFilter": one(
            list(WITH_UNIT),
            "Within or older than `value` `unit`s (of a date, or of the last time an event was triggered)",
            value={"type": "integer", "minimum": 1},
            unit={"type": "string", "enum": list(UNITS)},
        ),
        f"{prefix}PresenceFilter": one(
            list(NO_VALUE),
            "Takes no value: a data key's presence, an event ever (not) triggered, membership of a segment",
        ),
    }
    union = {
        "oneOf": [ref(name) for name in kinds],
        "discriminator": {
            "propertyName": "operator",
            "mapping": {
                operator: f"#/components/schemas/{name}"
                for name, schema in kinds.items()
                for operator in schema["properties"]["operator"]["enum"]
            },
        },
    }
    return {f"{prefix}Filter": union, **kinds}


COMPONENTS = {
    "Condition": {
        "type": "object",
        "description": f"Groups combined with `logic`; a group's nested condition makes the tree, at most "
        f"{MAX_DEPTH} deep",
        "required": ["logic", "groups"],
        "properties": {
            "logic": {"type": "string", "enum": list(LOGICS)},
            "groups": {"type": "array", "minItems": 1, "items": ref("ConditionGroup")},
        },
    },
    "ConditionGroup": {
        "type": "object",
        "description": "Its filters and its nested condition, all of which must hold; at least one of the two",
        "properties": {
            "filters": {"type": "array", "items": ref("ConditionFilter")},
            "conditions": {"allOf": [ref("Condition")], "nullable": True},
        },
        "anyOf": [
            {"required": ["filters"], "properties": {"filters": {"minItems": 1}}},
            {"required": ["conditions"], "properties": {"conditions": {"type": "object"}}},
        ],
    },
    **filter_components("Condition", FIELD),
}


def register(auto_schema, components: dict[str, dict]) -> None:
    """Add `components` to the schema being generated (copies: the enum post-processing rewrites them)."""
    for name, schema in components.items():
        auto_schema.registry.register_on_missing(
            ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=copy.deepcopy(schema))
        )


class ConditionField(serializers.JSONField):
    """A condition tree, checked by `condition_validate` in the service (with its exact error paths); published as
    the `Condition` component."""


class ConditionFieldScheme(OpenApiSerializerFieldExtension):
    target_class = ConditionField

    def map_serializer_field(self, auto_schema, direction):
        register(auto_schema, COMPONENTS)
        return ref("Condition")
