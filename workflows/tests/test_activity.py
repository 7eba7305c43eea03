"""Workflows in the activity feed, the upcoming list and the stats."""

import pytest

from core.time import iso
from workflows.models import WorkflowExecution

pytestmark = pytest.mark.django_db


@pytest.fixture
def delayed(api, committed, contact):
    workflow = api.workflow(name="Nurture")
    api.step(workflow, "DELAY", {"amount": 1, "unit": "days"})
    api.enable(workflow)
    execution = committed(lambda: api.start(workflow, contact))
    return workflow, execution


def test_started_and_completed_items(api, live, committed, contact, smtp_sink, secret_client):
    execution = committed(lambda: api.start(live, contact))
    items = secret_client.get("/activity?types=workflow.started,workflow.completed").json()["data"]
    assert [item["type"] for item in items] == ["workflow.completed", "workflow.started"]
    for item in items:
        assert item["id"] == execution["id"] and item["contactId"] == str(contact.id)
        assert item["contactEmail"] == "ann@example.com"
        assert item["metadata"]["workflowId"] == live["id"] and item["metadata"]["workflowName"] == "Welcome"
    assert {"workflow.started", "workflow.completed"} <= set(secret_client.get("/activity/types").json()["types"])
    assert secret_client.get("/activity/stats").json()["totalWorkflowsStarted"] == 1
    # Another contact's feed has none of them.
    assert secret_client.get(f"/activity?contactId={execution['id']}").json()["data"] == []


def test_waiting_executions_are_upcoming(delayed, secret_client, contact, other_client):
    workflow, execution = delayed
    resume_at = WorkflowExecution.objects.get().resume_at
    [item] = secret_client.get("/activity/upcoming?daysAhead=2").json()["activities"]
    assert item == {
        "type": "workflow",
        "id": execution["id"],
        "workflowId": workflow["id"],
        "contactId": str(contact.id),
        "resumeAt": iso(resume_at),
    }
    assert other_client.get("/activity/upcoming?daysAhead=2").json()["activities"] == []
    # Only started, not completed.
    items = secret_client.get("/activity?types=workflow.started,workflow.completed").json()["data"]
    assert [item["type"] for item in items] == ["workflow.started"]
