import pytest

from contacts.models import Event
from messaging.models import Template
from workflows.models import Workflow, WorkflowExecution

pytestmark = pytest.mark.django_db


def test_create_makes_a_disabled_event_workflow_with_its_trigger(api, project):
    created = api.workflow(description="Say hello")
    assert created == {
        "id": created["id"],
        "name": "Welcome",
        "description": "Say hello",
        "enabled": False,
        "triggerType": "EVENT",
        "triggerConfig": {"eventName": "signup"},
        "allowReentry": False,
        "projectId": str(project.id),
        "createdAt": created["createdAt"],
        "updatedAt": created["updatedAt"],
    }
    detail = api.get(created)
    assert [(s["type"], s["name"], s["config"]) for s in detail["steps"]] == [
        ("TRIGGER", "Trigger: signup", {"eventName": "signup"})
    ]
    assert detail["transitions"] == []


def test_update_changes_the_given_fields_and_renames_the_trigger(api):
    workflow = api.workflow()
    body = {"name": "Onboarding", "triggerConfig": {"eventName": "signed-up"}, "allowReentry": True}
    updated = api.call("patch", f"/workflows/{workflow['id']}", body, status=200)
    assert (updated["name"], updated["triggerConfig"], updated["allowReentry"]) == (
        "Onboarding",
        {"eventName": "signed-up"},
        True,
    )
    assert updated["description"] == workflow["description"]
    assert api.trigger(workflow)["name"] == "Trigger: signed-up"
    manual = api.call("patch", f"/workflows/{workflow['id']}", {"triggerType": "MANUAL"}, status=200)
    assert manual["triggerType"] == "MANUAL"


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "name"),
        ({"name": 5}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"name": "W", "triggerConfig": "signup"}, "triggerConfig"),
        ({"name": "W", "triggerConfig": {"eventName": 5}}, "triggerConfig.eventName"),
    ],
)
def test_bad_create_input_is_422_at_the_field(api, body, field):
    error = api.call("post", "/workflows", body, status=422)["error"]
    assert error["errors"][0]["field"] == field
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("body, field", [({"enabled": "yes"}, "enabled"), ({"triggerType": "CRON"}, "triggerType")])
def test_bad_update_input_is_422_at_the_field(api, body, field):
    workflow = api.workflow()
    error = api.call("patch", f"/workflows/{workflow['id']}", body, status=422)["error"]
    assert error["errors"][0]["field"] == field


def test_list_is_a_page_with_counts_filters_and_sorting(api, template, contact):
    first = api.workflow(name="Alpha", description="first steps")
    api.step(first, "DELAY", {"amount": 1, "unit": "days"})
    api.workflow(name="Beta")
    live = api.workflow(name="Gamma")
    api.step(live, "SEND_EMAIL", {"templateId": str(template.id)})
    api.enable(live)
    api.start(live, contact)

    page = api.call("get", "/workflows", status=200)
    assert (page["total"], page["page"], page["pageSize"], page["totalPages"]) == (3, 1, 20, 1)
    assert [(w["name"], w["stepCount"], w["executionCount"]) for w in page["data"]] == [
        ("Gamma", 2, 1),
        ("Beta", 1, 0),
        ("Alpha", 2, 0),
    ]
    names = lambda query: [w["name"] for w in api.call("get", f"/workflows?{query}", status=200)["data"]]  # noqa: E731
    assert names("status=active") == ["Gamma"]
    assert names("status=disabled&sort=name&dir=asc") == ["Alpha", "Beta"]
    assert names("search=FIRST") == ["Alpha"]
    assert names("pageSize=1&page=2") == ["Beta"]
    error = api.call("get", "/workflows?status=paused", status=422)["error"]
    assert error["errors"][0]["field"] == "status"


def test_list_takes_a_fixed_number_of_queries(api, template, django_assert_max_num_queries):
    for index in range(5):
        workflow = api.workflow(name=f"W{index}")
        api.step(workflow, "EXIT")
    with django_assert_max_num_queries(8):
        assert len(api.call("get", "/workflows", status=200)["data"]) == 5


def test_enabling_an_incomplete_workflow_names_what_is_missing(api, project):
    workflow = api.call("post", "/workflows", {"name": "Empty"}, status=201)
    assert workflow["triggerConfig"] == {"eventName": None}
    error = api.enable(workflow, status=422)["error"]
    assert [e["field"] for e in error["errors"]] == ["triggerConfig.eventName", "steps"]
    assert "event name" in error["message"]
    assert Workflow.objects.get().enabled is False


def test_enabling_needs_every_template_on_a_verified_domain(api, project):
    unverified = Template.objects.create(project=project.project, name="Cold", from_email="hi@nowhere.test")
    workflow = api.workflow()
    step = api.step(workflow, "SEND_EMAIL", {"templateId": str(unverified.id)}, name="Send cold")
    error = api.enable(workflow, status=422)["error"]
    assert error["errors"][0]["field"] == f"steps.{step['id']}.config.templateId"
    assert 'Step "Send cold"' in error["errors"][0]["message"] and "nowhere.test" in error["errors"][0]["message"]


def test_an_enabled_workflow_keeps_a_complete_trigger(live, api):
    error = api.call("patch", f"/workflows/{live['id']}", {"triggerConfig": {"eventName": ""}}, status=422)["error"]
    assert error["errors"][0]["field"] == "triggerConfig.eventName"
    disabled = api.call("patch", f"/workflows/{live['id']}", {"enabled": False}, status=200)
    assert disabled["enabled"] is False


def test_delete_is_refused_while_executions_are_active(live, api, contact):
    execution = api.start(live, contact)
    error = api.call("delete", f"/workflows/{live['id']}", status=409)["error"]
    assert error["code"] == "WORKFLOW_ACTIVE" and error["details"] == {"activeExecutions": 1}
    api.call("delete", f"/workflows/{live['id']}/executions/{execution['id']}", status=200)
    api.call("delete", f"/workflows/{live['id']}", status=204)
    assert not Workflow.objects.exists() and not WorkflowExecution.objects.exists()


def test_fields_lists_contact_fields_and_the_context_of_recent_events(api, project, contact):
    Event.objects.create(project=project.project, contact=contact, name="signup", data={"plan": "pro", "seats": 3})
    Event.objects.create(project=project.project, contact=contact, name="other", data={"ignored": True})
    body = api.call("get", "/workflows/fields?eventName=signup", status=200)
    assert body["fields"] == [
        "createdAt",
        "data.plan",
        "email",
        "subscribed",
        "updatedAt",
        "context.plan",
        "context.seats",
    ]
    assert body["count"] == 7
    assert body["typedFields"][-2:] == [
        {"field": "context.plan", "type": "string", "category": "event"},
        {"field": "context.seats", "type": "number", "category": "event"},
    ]
    assert {"field": "data.plan", "type": "string", "category": "contact"} in body["typedFields"]
    assert api.call("get", "/workflows/fields", status=200)["count"] == 5
