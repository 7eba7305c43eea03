"""OpenAPI: a step's config per step type (`workflows.configs` checks them), and the step bodies and the step as
unions discriminated by the step `type`. A config that does not fit is a 422 with its `config.<key>` path."""

import copy

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension

from segments.conditions.schema import DATA_PATH, FIELD, filter_components, ref, register
from workflows import configs
from workflows.api import serializers as s
from workflows.models import StepType

_TEXT = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"\S"}
_HEADERS = {
    "type": "object",
    "nullable": True,
    "description": "Header name (an RFC 9110 token) to value (one line; Liquid is rendered)",
    "additionalProperties": {"type": "string", "maxLength": configs.MAX_HEADER_VALUE},
}
_CONTEXT_FIELD = {
    **FIELD,
    "pattern": FIELD["pattern"].removesuffix(")$") + rf"|context\.{DATA_PATH})$",
    "description": FIELD["description"] + ", or context.<path> (the execution's context)",
}

CONFIGS = {
    StepType.TRIGGER: {
        "type": "object",
        "description": "Set through the workflow's triggerConfig",
        "properties": {"eventName": {"type": "string"}},
    },
    StepType.SEND_EMAIL: {
        "type": "object",
        "required": ["templateId"],
        "properties": {
            "templateId": {"type": "string", "format": "uuid", "description": "A template of the project"},
            "recipient": {
                "type": "object",
                "nullable": True,
                "description": "The execution's contact (CONTACT, the default) or a fixed address (CUSTOM)",
                "properties": {
                    "type": {"type": "string", "enum": list(configs.RECIPIENT_TYPES)},
                    "email": {"type": "string", "format": "email"},
                },
                "anyOf": [
                    {"properties": {"type": {"type": "string", "enum": ["CONTACT"]}}},
                    {"required": ["type", "email"], "properties": {"type": {"type": "string", "enum": ["CUSTOM"]}}},
                ],
            },
        },
    },
    StepType.DELAY: {
        "type": "object",
        "required": ["amount", "unit"],
        "description": f"At most {configs.MAX_DELAY_SECONDS // 86400} days",
        "properties": {
            "amount": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            "unit": {"type": "string", "enum": list(configs.DELAY_UNITS)},
        },
    },
    StepType.WAIT_FOR_EVENT: {
        "type": "object",
        "required": ["eventName"],
        "properties": {
            "eventName": _TEXT,
            "timeout": {
                "type": "integer",
                "nullable": True,
                "minimum": 1,
                "maximum": configs.MAX_TIMEOUT_SECONDS,
                "description": "Seconds; without one the step waits until the event comes",
            },
        },
    },
    StepType.CONDITION: ref("StepConditionFilter"),
    StepType.WEBHOOK: {
        "type": "object",
        "required": ["url"],
        "properties": {
            "url": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2048,
                "description": "http or https, no user-info; Liquid is rendered",
            },
            "method": {"type": "string", "nullable": True, "enum": [*configs.WEBHOOK_METHODS, None]},
            "headers": _HEADERS,
            "body": {
                "nullable": True,
                "description": f"At most {configs.MAX_BODY_BYTES // 1024} KB of JSON; its strings are rendered",
                "anyOf": [{"type": "object", "additionalProperties": True}, {"type": "array", "items": {}}],
            },
        },
    },
    StepType.UPDATE_CONTACT: {
        "type": "object",
        "description": "Changes something: `updates`, or a subscriptionAction other than none",
        "properties": {
            "updates": {
                "type": "object",
                "nullable": True,
                "additionalProperties": True,
                "description": "Merged into the contact's data, by the contact data rules",
            },
            "subscriptionAction": {"type": "string", "enum": list(configs.SUBSCRIPTION_ACTIONS)},
        },
        "anyOf": [
            {"required": ["updates"], "properties": {"updates": {"type": "object", "minProperties": 1}}},
            {
                "required": ["subscriptionAction"],
                # A pattern: an enum here would be taken for the property's own (spectacular names enums by property).
                "properties": {"subscriptionAction": {"type": "string", "pattern": "^(subscribe|unsubscribe)$"}},
            },
        ],
    },
    StepType.EXIT: {
        "type": "object",
        "properties": {"reason": {"type": "string", "nullable": True, "maxLength": 500}},
    },
}
# The one step type whose config may be left out (it is then {}).
OPTIONAL_CONFIG = {StepType.EXIT}


def _name(step_type: str, suffix: str) -> str:
    return "".join(word.capitalize() for word in step_type.split("_")) + suffix


def _components() -> dict[str, dict]:
    components = filter_components("StepCondition", _CONTEXT_FIELD)
    for step_type, schema in CONFIGS.items():
        if "$ref" not in schema:
            components[_name(step_type, "StepConfig")] = schema
    return components


def config_ref(step_type: str) -> dict:
    schema = CONFIGS[step_type]
    return schema if "$ref" in schema else ref(_name(step_type, "StepConfig"))


def _union(auto_schema, serializer, direction: str, step_types: list[str], suffix: str) -> dict:
    """The serializer's schema once per step type (`type` that one, `config` its config), registered as
    `<Type><suffix>`, and their union discriminated by `type`."""
    register(auto_schema, _components())
    base = auto_schema._map_serializer(serializer, direction, bypass_extensions=True)
    variants = {}
    for step_type in step_types:
        variant = copy.deepcopy(base)
        variant["properties"]["type"] = {"type": "string", "pattern": f"^{step_type}$"}
        variant["properties"]["config"] = config_ref(step_type)
        if direction == "request" and step_type in OPTIONAL_CONFIG:
            variant["properties"]["config"] = {"allOf": [config_ref(step_type)], "nullable": True}
        elif "config" not in variant.setdefault("required", []):
            variant["required"].append("config")
        variants[_name(step_type, suffix)] = variant
    register(auto_schema, variants)
    return {
        "oneOf": [ref(name) for name in variants],
        "discriminator": {
            "propertyName": "type",
            "mapping": {step_type: f"#/components/schemas/{_name(step_type, suffix)}" for step_type in step_types},
        },
    }


class StepCreateInputScheme(OpenApiSerializerExtension):
    target_class = s.StepCreateInputSerializer

    def map_serializer(self, auto_schema, direction):
        return _union(auto_schema, self.target, direction, s.ADDABLE_STEP_TYPES, "StepCreateInput")


class StepOutputScheme(OpenApiSerializerExtension):
    target_class = s.StepOutputSerializer

    def map_serializer(self, auto_schema, direction):
        return _union(auto_schema, self.target, direction, StepType.values, "Step")


class StepConfigFieldScheme(OpenApiSerializerFieldExtension):
    """A step's new config, whose type is the step's (not in the body): any step type's config."""

    target_class = s.StepConfigField

    def map_serializer_field(self, auto_schema, direction):
        register(auto_schema, _components())
        return {"anyOf": [config_ref(step_type) for step_type in s.ADDABLE_STEP_TYPES]}
