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


def test_a_dynamic_segment_is_created_with_its_condition(components):
    schema = request_schema(components, "/segments", "post")
    assert schema["required"] == ["name"]
    dynamic, static = schema["anyOf"]
    assert dynamic["required"] == ["condition"] and dynamic["properties"]["type"]["pattern"] == "^DYNAMIC$"
    assert static["required"] == ["type"] and static["properties"]["type"]["pattern"] == "^STATIC$"


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


@pytest.mark.parametrize(
    ("path", "content_type", "security"),
    [
        ("/webhooks/ses", "text/plain", [{"webhookBasicAuth": []}, {}]),
        ("/webhooks/postmark", "application/json", [{"webhookBasicAuth": []}]),
        ("/webhooks/mailgun", "application/json", [{"webhookBasicAuth": []}, {}]),
        ("/webhooks/brevo", "application/json", [{"webhookBasicAuth": []}]),
        ("/webhooks/sparkpost", "application/json", [{"webhookBasicAuth": []}]),
        (
            "/webhooks/resend",
            "application/json",
            [{"svixId": [], "svixTimestamp": [], "svixSignature": []}, {"webhookBasicAuth": []}],
        ),
        ("/webhooks/generic", "application/json", [{"heraldTimestamp": [], "heraldSignature": []}]),
        ("/webhooks/incoming/stripe", "application/json", [{"stripeSignature": []}]),
    ],
)
def test_the_provider_webhooks_are_published_with_their_body_and_authentication(path, content_type, security):
    schema = published_schema()
    post = schema["paths"][path]["post"]
    assert content_type in post["requestBody"]["content"]
    assert post["security"] == security
    assert {name for requirement in security for name in requirement} <= set(schema["components"]["securitySchemes"])
    assert {"200", "400", "403"} <= set(post["responses"])
    # Neither an API key nor a session: no "wrong kind of API key" answer; a body that does not parse is a 400.
    assert "401" not in post["responses"] or path == "/webhooks/ses"
    assert "422" not in post["responses"]


def test_every_provider_the_webhook_route_serves_is_published(db):
    from messaging.feedback.api.webhooks import PROVIDER_VIEWS

    published = {
        path.removeprefix("/webhooks/") for path in published_schema()["paths"] if path.startswith("/webhooks/")
    }
    assert set(PROVIDER_VIEWS) | {"generic", "incoming/stripe"} == published


GENERIC_EVENTS = [
    {"id": "e1", "type": "delivered", "messageId": "<m@x>"},
    {"id": "e1", "type": "bounced", "emailId": "abc", "bounceType": "hard", "reason": None},
    {"id": "e1", "type": "opened", "emailId": "abc", "bounceType": 3},
    {"id": "e1", "type": "bounced", "emailId": "abc"},
    {"id": "e1", "type": "bounced", "emailId": "abc", "bounceType": "late"},
    {"id": "", "type": "delivered", "messageId": "m"},
    {"type": "delivered", "messageId": "m"},
    {"id": "e1", "type": "sent", "messageId": "m"},
    {"id": "e1", "type": "clicked"},
    {"id": "e1", "type": "clicked", "messageId": ""},
    {"id": "e1", "type": "clicked", "emailId": "x" * 65},
    {"id": "e1", "type": "clicked", "emailId": "x", "link": 4},
]


@pytest.mark.parametrize("event", GENERIC_EVENTS)
def test_the_generic_webhooks_event_schema_accepts_what_its_parser_accepts(components, event):
    import json

    import jsonschema

    from messaging.feedback import generic

    try:
        generic.parse(json.dumps([event]).encode())
        parsed = True
    except generic.Malformed:
        parsed = False
    valid = jsonschema.Draft4Validator(components["GenericWebhookEvent"]).is_valid(
        {key: value for key, value in event.items() if value is not None}  # JSON Schema 4 has no `nullable`
    )
    assert valid == parsed


def _valid(components, name: str, value) -> bool:
    import jsonschema

    document = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": components}}
    return jsonschema.Draft4Validator(document).is_valid(value)


def _filter(**fields):
    return {"logic": "AND", "groups": [{"filters": [fields]}]}


@pytest.mark.parametrize(
    ("condition", "accepted"),
    [
        (_filter(field="email", operator="contains", value="@example.com"), True),
        (_filter(field="subscribed", operator="equals", value=True), True),
        (_filter(field="data.plan.tier", operator="greaterThan", value="3"), True),
        (_filter(field="createdAt", operator="within", value=7, unit="days"), True),
        (_filter(field="event.signup", operator="notTriggered"), True),
        (_filter(field="email.opened", operator="triggeredWithin", value=1, unit="hours"), True),
        ({"logic": "OR", "groups": [{"conditions": _filter(field="data.a", operator="exists")}]}, True),
        ({"logic": "AND", "groups": [{"filters": [], "conditions": _filter(field="email", operator="equals", value="a")}]}, True),
        ({"logic": "XOR", "groups": [{"filters": [{"field": "email", "operator": "equals", "value": "a"}]}]}, False),
        ({"logic": "AND", "groups": []}, False),
        ({"logic": "AND", "groups": [{"filters": []}]}, False),
        (_filter(field="plan", operator="equals", value="pro"), False),
        (_filter(field="email", operator="like", value="a"), False),
        (_filter(field="email", operator="equals"), False),
        (_filter(field="email", operator="equals", value=None), False),
        (_filter(field="createdAt", operator="within", value=0, unit="days"), False),
        (_filter(field="createdAt", operator="within", value=2, unit="weeks"), False),
        (_filter(field="createdAt", operator="within", value=2), False),
        (_filter(field="data.tags", operator="equals", value=["a"]), False),
    ],
)  # fmt: skip
def test_the_condition_schema_accepts_what_the_validator_accepts(components, condition, accepted):
    from core.errors import ValidationFailed
    from segments.conditions import condition_validate

    try:
        condition_validate(condition)
        validated = True
    except ValidationFailed:
        validated = False
    assert validated == accepted
    assert _valid(components, "Condition", condition) == accepted


@pytest.mark.parametrize(
    ("step_type", "config", "accepted"),
    [
        ("DELAY", {"amount": 2, "unit": "hours"}, True),
        ("DELAY", {"amount": 0, "unit": "hours"}, False),
        ("DELAY", {"amount": 2, "unit": "weeks"}, False),
        ("DELAY", {"unit": "hours"}, False),
        ("WAIT_FOR_EVENT", {"eventName": "paid", "timeout": 3600}, True),
        ("WAIT_FOR_EVENT", {"eventName": "  "}, False),
        ("WAIT_FOR_EVENT", {"eventName": "paid", "timeout": 0}, False),
        ("CONDITION", {"field": "context.order.total", "operator": "greaterThan", "value": 10}, True),
        ("CONDITION", {"field": "contexts.total", "operator": "greaterThan", "value": 10}, False),
        ("WEBHOOK", {"url": "https://hooks.example.com/x", "method": "PUT", "headers": {"X-A": "b"}, "body": [1]}, True),
        ("WEBHOOK", {"url": "https://hooks.example.com/x", "method": "TRACE"}, False),
        ("WEBHOOK", {"url": "https://hooks.example.com/x", "body": "text"}, False),
        ("WEBHOOK", {"method": "GET"}, False),
        ("UPDATE_CONTACT", {"updates": {"plan": "pro"}}, True),
        ("UPDATE_CONTACT", {"subscriptionAction": "unsubscribe"}, True),
        ("UPDATE_CONTACT", {"subscriptionAction": "none"}, False),
        ("UPDATE_CONTACT", {}, False),
        ("EXIT", {}, True),
        ("EXIT", {"reason": "x" * 501}, False),
    ],
)  # fmt: skip
def test_a_step_config_schema_accepts_what_the_step_validator_accepts(components, project, step_type, config, accepted):
    from core.errors import ValidationFailed
    from workflows.configs import step_config_clean

    try:
        step_config_clean(project=project, step_type=step_type, config=config)
        validated = True
    except ValidationFailed:
        validated = False
    assert validated == accepted
    variant = components["StepCreateInputRequest"]["discriminator"]["mapping"][step_type].rsplit("/", 1)[1]
    assert _valid(components, variant, {"type": step_type, "config": config}) == accepted
