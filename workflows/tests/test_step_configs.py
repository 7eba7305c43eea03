"""Step configs are validated on save, per step type, with every problem at its `config.<key>` path."""

import pytest

from messaging.models import Template
from workflows.models import WorkflowStep

pytestmark = pytest.mark.django_db

GOOD = [
    ("DELAY", {"amount": 1.5, "unit": "hours", "extra": 1}, {"amount": 1.5, "unit": "hours"}),
    ("DELAY", {"amount": 365, "unit": "days"}, {"amount": 365, "unit": "days"}),
    ("WAIT_FOR_EVENT", {"eventName": " paid ", "timeout": 60}, {"eventName": "paid", "timeout": 60}),
    ("CONDITION", {"field": "data.plan", "operator": "equals", "value": "pro"}, None),
    ("CONDITION", {"field": "context.total", "operator": "greaterThan", "value": 10}, None),
    ("CONDITION", {"field": "event.purchase", "operator": "triggeredWithin", "value": 7, "unit": "days"}, None),
    (
        "WEBHOOK",
        {"url": "https://crm.example.com/hook/{{ id }}"},
        {"url": "https://crm.example.com/hook/{{ id }}", "method": "POST"},
    ),
    (
        "WEBHOOK",
        {
            "url": "http://crm.example.com",
            "method": "PUT",
            "headers": {"X-Token": "{{ plan }}"},
            "body": {"a": ["{{ email }}"]},
        },
        None,
    ),
    (
        "UPDATE_CONTACT",
        {"updates": {"stage": "onboarded"}},
        {"updates": {"stage": "onboarded"}, "subscriptionAction": "none"},
    ),
    ("UPDATE_CONTACT", {"subscriptionAction": "unsubscribe"}, None),
    ("EXIT", {}, {}),
    ("EXIT", {"reason": "Converted"}, None),
]


@pytest.mark.parametrize("step_type, config, stored", GOOD)
def test_valid_configs_are_stored_cleaned(api, step_type, config, stored):
    workflow = api.workflow()
    step = api.step(workflow, step_type, config)
    assert step["config"] == (stored if stored is not None else config)


def test_send_email_names_this_projects_template(api, template):
    workflow = api.workflow()
    step = api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    assert step["templateId"] == str(template.id)
    assert step["config"] == {"templateId": str(template.id), "recipient": {"type": "CONTACT"}}
    custom = {"templateId": str(template.id), "recipient": {"type": "CUSTOM", "email": "Ops@Example.com"}}
    assert api.step(workflow, "SEND_EMAIL", custom)["config"]["recipient"] == {
        "type": "CUSTOM",
        "email": "ops@example.com",
    }


BAD = [
    ("DELAY", {"unit": "days"}, "config.amount", "invalid_type"),
    ("DELAY", {"amount": "2", "unit": "days"}, "config.amount", "invalid_type"),
    ("DELAY", {"amount": 0, "unit": "days"}, "config.amount", "too_small"),
    ("DELAY", {"amount": 366, "unit": "days"}, "config.amount", "too_big"),
    ("DELAY", {"amount": 8761, "unit": "hours"}, "config.amount", "too_big"),
    ("DELAY", {"amount": 1, "unit": "weeks"}, "config.unit", "invalid_enum_value"),
    ("DELAY", {"amount": 1}, "config.unit", "invalid_type"),
    ("WAIT_FOR_EVENT", {}, "config.eventName", "invalid_type"),
    ("WAIT_FOR_EVENT", {"eventName": "paid", "timeout": "1h"}, "config.timeout", "invalid_type"),
    ("WAIT_FOR_EVENT", {"eventName": "paid", "timeout": 0}, "config.timeout", "too_small"),
    ("WAIT_FOR_EVENT", {"eventName": "paid", "timeout": 31_536_001}, "config.timeout", "too_big"),
    (
        "CONDITION",
        {"field": "data.plan", "operator": "resembles", "value": "x"},
        "config.operator",
        "invalid_enum_value",
    ),
    ("CONDITION", {"field": "nope", "operator": "equals", "value": "x"}, "config.field", "invalid_string"),
    ("CONDITION", {"field": "data.plan", "operator": "equals"}, "config.value", "invalid_type"),
    ("CONDITION", {"field": "data.age", "operator": "within", "value": 3}, "config.unit", "invalid_type"),
    (
        "CONDITION",
        {"field": "segment.00000000-0000-4000-8000-000000000000", "operator": "memberOfSegment"},
        "config.field",
        "custom",
    ),
    ("WEBHOOK", {}, "config.url", "invalid_type"),
    ("WEBHOOK", {"url": "ftp://crm.example.com/x"}, "config.url", "invalid_string"),
    ("WEBHOOK", {"url": "file:///etc/passwd"}, "config.url", "invalid_string"),
    ("WEBHOOK", {"url": "https://user:pw@crm.example.com/"}, "config.url", "invalid_string"),
    ("WEBHOOK", {"url": "https://crm.example.com/{{ id"}, "config.url", "custom"),
    ("WEBHOOK", {"url": "https://crm.example.com", "method": "TRACE"}, "config.method", "invalid_enum_value"),
    ("WEBHOOK", {"url": "https://crm.example.com", "method": ["GET"]}, "config.method", "invalid_enum_value"),
    ("WEBHOOK", {"url": 5}, "config.url", "invalid_type"),
    ("WEBHOOK", {"url": "https://"}, "config.url", "invalid_string"),
    ("WEBHOOK", {"url": "https://crm.example.com", "headers": ["X: y"]}, "config.headers", "invalid_type"),
    ("WEBHOOK", {"url": "https://crm.example.com", "headers": {"X-A": 1}}, "config.headers.X-A", "invalid_type"),
    (
        "WEBHOOK",
        {"url": "https://crm.example.com", "headers": {"X-A": "a\r\nHost: evil"}},
        "config.headers.X-A",
        "invalid_string",
    ),
    (
        "WEBHOOK",
        {"url": "https://crm.example.com", "headers": {"Bad Name": "a"}},
        "config.headers.Bad Name",
        "invalid_string",
    ),
    ("WEBHOOK", {"url": "https://crm.example.com", "body": "raw"}, "config.body", "invalid_type"),
    ("WEBHOOK", {"url": "https://crm.example.com", "body": {"a": {"b": "{% if %}"}}}, "config.body.a.b", "custom"),
    ("UPDATE_CONTACT", {}, "config", "custom"),
    ("UPDATE_CONTACT", {"updates": {}, "subscriptionAction": "none"}, "config", "custom"),
    ("UPDATE_CONTACT", {"updates": "plan=pro"}, "config.updates", "invalid_type"),
    ("UPDATE_CONTACT", {"subscriptionAction": "snooze"}, "config.subscriptionAction", "invalid_enum_value"),
    ("EXIT", {"reason": 5}, "config.reason", "invalid_type"),
    ("EXIT", "done", "config", "invalid_type"),
    ("SEND_EMAIL", {}, "config.templateId", "invalid_type"),
    ("SEND_EMAIL", {"templateId": "not-a-uuid"}, "config.templateId", "custom"),
    ("TRIGGER", {}, "type", "invalid_enum_value"),
    ("SLEEP", {}, "type", "invalid_enum_value"),
]


@pytest.mark.parametrize("step_type, config, field, code", BAD)
def test_invalid_configs_are_422_at_the_key_and_store_nothing(api, step_type, config, field, code):
    workflow = api.workflow()
    error = api.step(workflow, step_type, config, status=422)["error"]
    assert (error["errors"][0]["field"], error["errors"][0]["code"]) == (field, code)
    assert WorkflowStep.objects.count() == 1


def test_every_problem_is_reported_at_once(api):
    workflow = api.workflow()
    error = api.step(workflow, "DELAY", {"amount": -1, "unit": "years"}, status=422)["error"]
    assert [e["field"] for e in error["errors"]] == ["config.amount", "config.unit"]


def test_a_template_of_another_project_is_refused(api, other_project):
    theirs = Template.objects.create(project=other_project.project, name="Theirs", from_email="hi@bob.test")
    workflow = api.workflow()
    error = api.step(workflow, "SEND_EMAIL", {"templateId": str(theirs.id)}, status=422)["error"]
    assert error["errors"][0]["field"] == "config.templateId"
    assert "not found in this project" in error["errors"][0]["message"]


def test_an_unknown_condition_field_names_the_context_form_too(api):
    workflow = api.workflow()
    error = api.step(workflow, "CONDITION", {"field": "context.", "operator": "exists"}, status=422)["error"]
    assert error["errors"][0]["field"] == "config.field"
    assert error["errors"][0]["message"].endswith("or context.<path> (the execution's context)")


JUNK = [None, 0, -1, 1e308, True, "", " ", "x" * 3000, "{{", [], ["a"], {}, {"a": {"b": []}}]
KEYS = {
    "SEND_EMAIL": ["templateId", "recipient"],
    "DELAY": ["amount", "unit"],
    "WAIT_FOR_EVENT": ["eventName", "timeout"],
    "CONDITION": ["field", "operator", "value", "unit"],
    "CONDITION_WITH_UNIT": ["value", "unit"],
    "WEBHOOK": ["url", "method", "headers", "body"],
    "UPDATE_CONTACT": ["updates", "subscriptionAction"],
    "EXIT": ["reason"],
}


@pytest.mark.parametrize("step_type", KEYS)
def test_junk_in_any_config_key_is_refused_or_stored_never_a_server_error(api, template, step_type):
    base = {
        "SEND_EMAIL": {"templateId": str(template.id)},
        "DELAY": {"amount": 1, "unit": "days"},
        "WAIT_FOR_EVENT": {"eventName": "paid"},
        "CONDITION": {"field": "data.plan", "operator": "equals", "value": "pro"},
        "CONDITION_WITH_UNIT": {"field": "context.seen", "operator": "within", "value": 3, "unit": "days"},
        "WEBHOOK": {"url": "https://crm.example.com"},
        "UPDATE_CONTACT": {"updates": {"plan": "pro"}},
        "EXIT": {},
    }[step_type]
    workflow = api.workflow()
    for key in KEYS[step_type]:
        for value in JUNK:
            response = api.client.post(
                f"/workflows/{workflow['id']}/steps",
                {"type": step_type.removesuffix("_WITH_UNIT"), "config": {**base, key: value}, "autoConnect": False},
                format="json",
            )
            assert response.status_code in (201, 422), (key, value, response.content)
            if response.status_code == 422:
                assert response.json()["error"]["errors"][0]["field"].startswith("config")
