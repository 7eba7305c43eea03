"""Any JSON value in any field of any workflows endpoint is answered with a success or a 4xx, never a 500, and a
refusal changes nothing."""

import pytest

from workflows.models import Workflow, WorkflowExecution, WorkflowStep, WorkflowTransition
from workflows.tests.test_step_configs import JUNK

pytestmark = pytest.mark.django_db


def snapshot():
    return [
        list(model.objects.order_by("pk").values())
        for model in (Workflow, WorkflowStep, WorkflowTransition, WorkflowExecution)
    ]


def test_junk_in_every_field(api, live, contact):
    detail = api.get(live)
    trigger, send = detail["steps"]
    routes = [
        ("post", "/workflows", {"name": "W"}, ["name", "description", "triggerConfig"]),
        (
            "patch",
            f"/workflows/{live['id']}",
            {},
            ["name", "description", "triggerType", "triggerConfig", "enabled", "allowReentry"],
        ),
        (
            "post",
            f"/workflows/{live['id']}/steps",
            {"type": "EXIT"},
            ["type", "name", "position", "config", "autoConnect"],
        ),
        ("patch", f"/workflows/{live['id']}/steps/{send['id']}", {}, ["name", "position", "config"]),
        (
            "post",
            f"/workflows/{live['id']}/transitions",
            {"fromStepId": send["id"], "toStepId": trigger["id"]},
            ["fromStepId", "toStepId", "branch", "waitOutcome"],
        ),
        (
            "post",
            f"/workflows/{live['id']}/executions",
            {"contactId": str(contact.id)},
            ["contactId", "email", "context"],
        ),
    ]
    for method, path, base, fields in routes:
        for field in fields:
            for value in [*JUNK, {"x": None}, [{}], "00000000-0000-4000-8000-000000000000"]:
                before = snapshot()
                response = getattr(api.client, method)(path, {**base, field: value}, format="json")
                assert response.status_code < 500, (method, path, field, value, response.content)
                if response.status_code >= 400:
                    assert snapshot() == before, (method, path, field, value)
                elif method == "post" and path.endswith("/executions"):
                    WorkflowExecution.objects.all().delete()  # so the next start is not refused by re-entry
