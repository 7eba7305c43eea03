"""Graph edits and starts racing each other keep the rules: concurrent requests never close a loop, never give a
step two ways out, and never start two executions a contact may not have."""

import pytest
from django.db import connection

from conftest import client_with, concurrently
from contacts.models import Contact
from messaging.models import Template
from workflows.models import WorkflowExecution, WorkflowTransition
from workflows.tests.conftest import Api


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")


def new_api(project) -> Api:
    return Api(client_with(project.keys.secret_key))


@pytest.mark.django_db(transaction=True)
def test_opposite_transitions_at_once_never_make_a_loop(postgres, project):
    api = new_api(project)
    workflow = api.workflow()
    one = api.step(workflow, "DELAY", {"amount": 1, "unit": "days"}, autoConnect=False)
    two = api.step(workflow, "DELAY", {"amount": 1, "unit": "days"}, autoConnect=False)
    pairs = [(one, two), (two, one)] * 4

    def link(pair):
        body = {"fromStepId": pair[0]["id"], "toStepId": pair[1]["id"]}
        return new_api(project).client.post(f"/workflows/{workflow['id']}/transitions", body, format="json")

    statuses = sorted(response.status_code for response in concurrently(link, pairs))
    assert statuses == [201] + [422] * 7
    assert WorkflowTransition.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_make_one_execution(postgres, project):
    api = new_api(project)
    template = Template.objects.create(project=project.project, name="T", from_email="hi@alice.test")
    workflow = api.workflow()
    api.call("patch", f"/workflows/{workflow['id']}", {"allowReentry": True}, status=200)
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    api.enable(workflow)
    contact = Contact.objects.create(project=project.project, email="ann@example.com")

    def start(_):
        body = {"contactId": str(contact.id)}
        return new_api(project).client.post(f"/workflows/{workflow['id']}/executions", body, format="json")

    statuses = sorted(response.status_code for response in concurrently(start, range(8)))
    assert statuses == [201] + [409] * 7
    assert WorkflowExecution.objects.count() == 1
