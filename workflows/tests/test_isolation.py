"""Another project's workflow, step, transition or execution is 404 on every route, and nothing of it changes."""

import pytest

from conftest import client_with, persona_client
from workflows.models import Workflow, WorkflowExecution, WorkflowStep, WorkflowTransition
from workflows.tests.conftest import Api

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["key", "session"])
def api(request, project) -> Api:
    """Our client, once with the secret key and once with the owner's browser session: neither reaches theirs."""
    return Api(persona_client(project, request.param))


@pytest.fixture
def theirs(other_project, contact):
    """A complete, enabled workflow of the other project with a running execution."""
    from contacts.models import Contact
    from messaging.models import Template

    api = Api(client_with(other_project.keys.secret_key))
    template = Template.objects.create(project=other_project.project, name="T", from_email="hi@bob.test")
    workflow = api.workflow()
    step = api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    api.enable(workflow)
    their_contact = Contact.objects.create(project=other_project.project, email="zed@example.com")
    execution = api.start(workflow, their_contact)
    transition = api.get(workflow)["transitions"][0]
    return {
        "workflow": workflow["id"],
        "step": step["id"],
        "transition": transition["id"],
        "execution": execution["id"],
    }


ROUTES = [
    ("get", "/workflows/{workflow}", None, "WORKFLOW_NOT_FOUND"),
    ("patch", "/workflows/{workflow}", {"name": "Mine now"}, "WORKFLOW_NOT_FOUND"),
    ("delete", "/workflows/{workflow}", None, "WORKFLOW_NOT_FOUND"),
    ("post", "/workflows/{workflow}/steps", {"type": "EXIT"}, "WORKFLOW_NOT_FOUND"),
    ("patch", "/workflows/{workflow}/steps/{step}", {"name": "x"}, "WORKFLOW_NOT_FOUND"),
    ("delete", "/workflows/{workflow}/steps/{step}", None, "WORKFLOW_NOT_FOUND"),
    ("post", "/workflows/{workflow}/transitions", {}, "WORKFLOW_NOT_FOUND"),
    ("delete", "/workflows/{workflow}/transitions/{transition}", None, "WORKFLOW_NOT_FOUND"),
    ("get", "/workflows/{workflow}/executions", None, "WORKFLOW_NOT_FOUND"),
    ("post", "/workflows/{workflow}/executions", {"email": "zed@example.com"}, "WORKFLOW_NOT_FOUND"),
    ("get", "/workflows/{workflow}/executions/{execution}", None, "WORKFLOW_NOT_FOUND"),
    ("delete", "/workflows/{workflow}/executions/{execution}", None, "WORKFLOW_NOT_FOUND"),
    ("post", "/workflows/{workflow}/executions/cancel-all", None, "WORKFLOW_NOT_FOUND"),
    # Their child ids under one of my workflows.
    ("patch", "/workflows/{mine}/steps/{step}", {"name": "x"}, "WORKFLOW_STEP_NOT_FOUND"),
    ("delete", "/workflows/{mine}/steps/{step}", None, "WORKFLOW_STEP_NOT_FOUND"),
    ("delete", "/workflows/{mine}/transitions/{transition}", None, "WORKFLOW_TRANSITION_NOT_FOUND"),
    ("get", "/workflows/{mine}/executions/{execution}", None, "WORKFLOW_EXECUTION_NOT_FOUND"),
    ("delete", "/workflows/{mine}/executions/{execution}", None, "WORKFLOW_EXECUTION_NOT_FOUND"),
    ("get", "/workflows/not-a-uuid", None, "WORKFLOW_NOT_FOUND"),
    ("delete", "/workflows/{mine}/steps/not-a-uuid", None, "WORKFLOW_STEP_NOT_FOUND"),
]


@pytest.mark.parametrize("method, path, body, code", ROUTES)
def test_another_projects_ids_are_404(api, theirs, method, path, body, code):
    mine = api.workflow()
    before = _state()
    error = api.call(method, path.format(mine=mine["id"], **theirs), body, status=404)["error"]
    assert error["code"] == code
    assert _state() == before


def _state():
    return (
        list(Workflow.objects.order_by("id").values()),
        list(WorkflowStep.objects.order_by("id").values()),
        list(WorkflowTransition.objects.order_by("id").values()),
        list(WorkflowExecution.objects.order_by("id").values()),
    )


def test_their_steps_and_contacts_cannot_be_used_in_my_workflow(api, theirs, other_project):
    mine = api.workflow()
    trigger = api.trigger(mine)
    error = api.link(mine, trigger, {"id": theirs["step"]}, status=422)["error"]
    assert error["errors"][0]["field"] == "toStepId"
    api.enable(mine, status=422)
    assert api.call("get", "/workflows", status=200)["total"] == 1
