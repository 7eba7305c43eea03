"""The published schema describes the resources as the API reference does, to the field: a client generated from it
gets the types the service writes (objects, enums, the items of lists), not an untyped value."""

import pytest

from config.tests.openapi import published_schema


@pytest.fixture
def components(db):
    return published_schema()["components"]["schemas"]


def resolve(components, schema: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


@pytest.mark.parametrize(
    ("component", "path", "expected"),
    [
        ("ContactOutput", ["data"], {"type": "object"}),
        ("EventOutput", ["data"], {"type": "object"}),
        ("Field", ["type"], {"enum": ["string", "number", "boolean", "date", "object", "array"]}),
        ("SegmentOutput", ["type"], {"type": "string", "enum": ["DYNAMIC", "STATIC"]}),
        ("DomainOutput", ["status"], {"type": "string", "enum": ["pending", "verified"]}),
        ("TemplateUsage", ["campaigns", "items"], {"required": ["id", "name", "status"]}),
        ("TemplateUsage", ["workflowSteps", "items"], {"required": ["stepId", "workflowId", "workflowName"]}),
    ],
)
def test_a_resource_field_has_the_documented_type(components, component, path, expected):
    schema = resolve(components, components[component])
    for step in path:
        schema = resolve(components, schema["properties"][step] if step != "items" else schema["items"])
    assert {key: schema.get(key) for key in expected} == expected


def operation(path: str, method: str) -> dict:
    return published_schema()["paths"][path][method]


def request_schema(components, path: str, method: str) -> dict:
    return resolve(components, operation(path, method)["requestBody"]["content"]["application/json"]["schema"])


def test_removing_segment_members_documents_its_body(components):
    body = operation("/segments/{id}/members", "delete")["requestBody"]
    schema = resolve(components, body["content"]["application/json"]["schema"])
    assert body["required"] is True
    assert schema["required"] == ["emails"]
    assert schema["properties"]["emails"] == {
        "type": "array",
        "items": {"type": "string", "format": "email", "minLength": 1},
        "minItems": 1,
        "maxItems": 500,
    }


def test_a_send_requires_its_recipients_and_a_content_unless_a_template_gives_it(components):
    schema = request_schema(components, "/v1/send", "post")
    assert schema["required"] == ["to"]
    assert schema["anyOf"] == [
        {"required": ["template"], "properties": {"template": {"type": "string", "format": "uuid"}}},
        {"required": ["subject", "body", "from"]},
    ]


def test_a_template_is_created_with_its_sender_and_changed_without(components):
    assert request_schema(components, "/templates", "post")["required"] == ["from"]
    assert "required" not in request_schema(components, "/templates/{id}", "patch")


def test_the_parts_of_a_send_are_typed(components):
    properties = request_schema(components, "/v1/send", "post")["properties"]
    assert properties["headers"]["additionalProperties"] == {"type": "string", "maxLength": 998}
    assert properties["reply"]["oneOf"][0] == {"type": "string", "format": "email"}
    attachment = properties["attachments"]["items"]
    assert attachment["required"] == ["filename", "content"]
    assert attachment["properties"]["content"]["format"] == "byte"
    assert properties["attachments"]["maxItems"] == 10
    sent = resolve(components, components["SentEmail"]["properties"]["contact"])
    assert sent["required"] == ["email", "id"]
    assert sent["properties"]["id"] == {"type": "string", "format": "uuid"}


def test_a_condition_is_a_recursive_tree_of_groups_and_filters_discriminated_by_operator(components):
    from segments.conditions.spec import OPERATORS

    condition = components["Condition"]
    assert condition["required"] == ["logic", "groups"]
    assert resolve(components, condition["properties"]["logic"])["enum"] == ["AND", "OR"]
    group = resolve(components, condition["properties"]["groups"]["items"])
    assert group["properties"]["conditions"]["allOf"] == [{"$ref": "#/components/schemas/Condition"}]
    union = resolve(components, group["properties"]["filters"]["items"])
    assert union["discriminator"]["propertyName"] == "operator"
    assert sorted(union["discriminator"]["mapping"]) == sorted(OPERATORS)
    by_operator = {
        operator: resolve(components, kind)
        for kind in union["oneOf"]
        for operator in resolve(components, resolve(components, kind)["properties"]["operator"])["enum"]
    }
    assert sorted(by_operator) == sorted(OPERATORS)
    assert by_operator["within"]["required"] == ["field", "operator", "value", "unit"]
    assert by_operator["equals"]["required"] == ["field", "operator", "value"]
    assert by_operator["exists"]["required"] == ["field", "operator"]


@pytest.mark.parametrize(
    ("component", "field"),
    [
        ("SegmentCreateInputRequest", "condition"),
        ("PatchedSegmentUpdateInputRequest", "condition"),
        ("SegmentOutput", "condition"),
        ("CampaignInputRequest", "audienceCondition"),
        ("CampaignOutput", "audienceCondition"),
    ],
)
def test_segments_and_campaign_audiences_take_the_condition_tree(components, component, field):
    assert components[component]["properties"][field] == {
        "allOf": [{"$ref": "#/components/schemas/Condition"}],
        "nullable": True,
    }


@pytest.mark.parametrize(
    "field",
    ["email", "subscribed", "createdAt", "updatedAt", "data.plan", "data.plan.tier", "event.signup", "segment.x",
     "email.opened", "email.read", "data.", "data..x", 'data.a"b', "data.a\\b", "event.", "segment.", "plan", "name"],
)  # fmt: skip
def test_the_field_pattern_accepts_exactly_the_fields_the_language_reads(components, field):
    import re

    from segments.conditions.spec import parse_field

    pattern = resolve(components, components["ConditionValueFilter"])["properties"]["field"]["pattern"]
    assert bool(re.search(pattern, field)) == (parse_field(field) is not None)


def test_a_step_is_a_union_discriminated_by_its_type_with_the_config_of_that_type(components):
    from workflows.models import StepType

    created = request_schema(components, "/workflows/{id}/steps", "post")
    answered = components["StepOutput"]
    assert created["discriminator"]["propertyName"] == answered["discriminator"]["propertyName"] == "type"
    assert sorted(created["discriminator"]["mapping"]) == sorted(set(StepType.values) - {"TRIGGER"})
    assert sorted(answered["discriminator"]["mapping"]) == sorted(StepType.values)
    delay = resolve(components, {"$ref": created["discriminator"]["mapping"]["DELAY"]})
    assert delay["required"] == ["type", "config"]
    config = resolve(components, delay["properties"]["config"])
    assert config["required"] == ["amount", "unit"]
    assert resolve(components, config["properties"]["unit"])["enum"] == ["days", "hours", "minutes"]
    condition = resolve(components, {"$ref": answered["discriminator"]["mapping"]["CONDITION"]})
    assert resolve(components, condition["properties"]["config"])["discriminator"]["propertyName"] == "operator"
    send = resolve(components, {"$ref": answered["discriminator"]["mapping"]["SEND_EMAIL"]})
    assert resolve(components, send["properties"]["config"])["required"] == ["templateId"]


def test_a_steps_new_config_is_one_of_the_step_types_configs(components):
    config = request_schema(components, "/workflows/{id}/steps/{step_id}", "patch")["properties"]["config"]
    assert {entry["$ref"].rsplit("/", 1)[1] for entry in config["anyOf"]} == {
        "SendEmailStepConfig",
        "DelayStepConfig",
        "WaitForEventStepConfig",
        "StepConditionFilter",
        "WebhookStepConfig",
        "UpdateContactStepConfig",
        "ExitStepConfig",
    }


def test_a_campaign_is_scheduled_with_a_date_time(components):
    scheduled = request_schema(components, "/campaigns/{id}/send", "post")["properties"]["scheduledFor"]
    assert scheduled["anyOf"][0] == {"type": "string", "format": "date-time"}
    assert [kind.get("format", kind["type"]) for kind in scheduled["anyOf"]] == ["date-time", "date", "number"]
    assert scheduled["nullable"] is True
