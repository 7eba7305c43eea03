"""Executions as the API starts, lists, reads and cancels them (what the engine then does: test_engine.py)."""

import pytest

from contacts.models import Contact
from workflows.models import WorkflowExecution, WorkflowStepExecution

pytestmark = pytest.mark.django_db


def test_start_creates_a_running_execution_at_the_trigger(live, api, contact):
    execution = api.start(live, contact, context={"source": "admin"})
    trigger = api.trigger(live)
    assert execution == {
        "id": execution["id"],
        "workflowId": live["id"],
        "contactId": str(contact.id),
        "contact": {"id": str(contact.id), "email": "ann@example.com"},
        "status": "RUNNING",
        "currentStepId": trigger["id"],
        "currentStep": {"id": trigger["id"], "name": "Trigger: signup", "type": "TRIGGER"},
        "exitReason": None,
        "context": {"source": "admin"},
        "startedAt": execution["startedAt"],
        "completedAt": None,
        "createdAt": execution["createdAt"],
        "updatedAt": execution["updatedAt"],
    }
    detail = api.call("get", f"/workflows/{live['id']}/executions/{execution['id']}", status=200)
    assert detail == {**execution, "stepExecutions": []}


def test_start_by_email(live, api, contact):
    body = {"email": "ANN@example.com"}
    execution = api.call("post", f"/workflows/{live['id']}/executions", body, status=201)
    assert execution["contactId"] == str(contact.id)


@pytest.mark.parametrize(
    "body, status, field",
    [
        ({}, 422, "contactId"),
        ({"contactId": "nope"}, 422, "contactId"),
        ({"email": "ann@example.com", "context": "x"}, 422, "context"),
        ({"email": "nobody@example.com"}, 404, None),
        ({"contactId": "00000000-0000-4000-8000-000000000000"}, 404, None),
    ],
)
def test_bad_start_input(live, api, contact, body, status, field):
    error = api.call("post", f"/workflows/{live['id']}/executions", body, status=status)["error"]
    if field:
        assert error["errors"][0]["field"] == field
    else:
        assert error["code"] == "CONTACT_NOT_FOUND"
    assert not WorkflowExecution.objects.exists()


def test_a_contact_of_another_project_is_not_found(live, api, other_project):
    theirs = Contact.objects.create(project=other_project.project, email="ann@example.com")
    assert api.start(live, theirs, status=404)["error"]["code"] == "CONTACT_NOT_FOUND"


def test_a_disabled_workflow_starts_nothing(api, contact):
    workflow = api.workflow()
    error = api.start(workflow, contact, status=409)["error"]
    assert error["code"] == "WORKFLOW_DISABLED"
    assert not WorkflowExecution.objects.exists()


def test_without_reentry_a_contact_enters_once_ever(live, api, contact):
    first = api.start(live, contact)
    api.call("delete", f"/workflows/{live['id']}/executions/{first['id']}", status=200)
    error = api.start(live, contact, status=409)["error"]
    assert error["code"] == "CONFLICT" and "re-entry" in error["message"]


def test_with_reentry_one_active_execution_at_a_time(live, api, contact):
    api.call("patch", f"/workflows/{live['id']}", {"allowReentry": True}, status=200)
    first = api.start(live, contact)
    error = api.start(live, contact, status=409)["error"]
    assert "running or waiting" in error["message"]
    api.call("delete", f"/workflows/{live['id']}/executions/{first['id']}", status=200)
    api.start(live, contact)
    assert WorkflowExecution.objects.count() == 2


def test_list_newest_first_with_a_status_filter(live, api, project):
    people = [Contact.objects.create(project=project.project, email=f"p{i}@example.com") for i in range(3)]
    started = [api.start(live, person) for person in people]
    api.call("delete", f"/workflows/{live['id']}/executions/{started[0]['id']}", status=200)
    page = api.call("get", f"/workflows/{live['id']}/executions", status=200)
    assert [e["id"] for e in page["data"]] == [e["id"] for e in reversed(started)]
    assert (page["total"], page["page"], page["pageSize"], page["totalPages"]) == (3, 1, 20, 1)
    cancelled = api.call("get", f"/workflows/{live['id']}/executions?status=CANCELLED", status=200)
    assert [e["id"] for e in cancelled["data"]] == [started[0]["id"]]
    error = api.call("get", f"/workflows/{live['id']}/executions?status=DONE", status=422)["error"]
    assert error["errors"][0]["field"] == "status"


def test_cancel_a_running_execution_and_its_pending_steps(live, api, contact):
    execution = api.start(live, contact)
    row = WorkflowExecution.objects.get()
    pending = WorkflowStepExecution.objects.create(execution=row, step=row.current_step, status="SCHEDULED")
    cancelled = api.call("delete", f"/workflows/{live['id']}/executions/{execution['id']}", status=200)
    assert (cancelled["status"], cancelled["exitReason"]) == ("CANCELLED", "Cancelled by user")
    assert cancelled["completedAt"] is not None
    pending.refresh_from_db()
    assert pending.status == "SKIPPED"
    detail = api.call("get", f"/workflows/{live['id']}/executions/{execution['id']}", status=200)
    assert [(s["status"], s["step"]["type"]) for s in detail["stepExecutions"]] == [("SKIPPED", "TRIGGER")]


@pytest.mark.parametrize("status", ["COMPLETED", "EXITED", "FAILED", "CANCELLED"])
def test_a_finished_execution_cannot_be_cancelled(live, api, contact, status):
    execution = api.start(live, contact)
    WorkflowExecution.objects.update(status=status)
    error = api.call("delete", f"/workflows/{live['id']}/executions/{execution['id']}", status=409)["error"]
    assert error["details"] == {"status": status}
    assert WorkflowExecution.objects.get().status == status


def test_cancel_all(live, api, project):
    people = [Contact.objects.create(project=project.project, email=f"p{i}@example.com") for i in range(3)]
    for person in people:
        api.start(live, person)
    WorkflowExecution.objects.filter(contact=people[0]).update(status="COMPLETED")
    assert api.call("post", f"/workflows/{live['id']}/executions/cancel-all", status=200) == {"cancelled": 2}
    assert api.call("post", f"/workflows/{live['id']}/executions/cancel-all", status=200) == {"cancelled": 0}
    assert sorted(WorkflowExecution.objects.values_list("status", flat=True)) == ["CANCELLED", "CANCELLED", "COMPLETED"]


def test_the_list_takes_a_fixed_number_of_queries(live, api, project, django_assert_max_num_queries):
    for index in range(5):
        api.start(live, Contact.objects.create(project=project.project, email=f"p{index}@example.com"))
    with django_assert_max_num_queries(8):
        assert len(api.call("get", f"/workflows/{live['id']}/executions", status=200)["data"]) == 5
