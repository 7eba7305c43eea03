"""Templates, event names and contact fields know the workflows that use them, and are not deleted from under them."""

import pytest

from conftest import client_with
from contacts.models import Event
from messaging.models import Template
from workflows.tests.conftest import Api

pytestmark = pytest.mark.django_db


def test_a_template_lists_its_steps_and_cannot_be_deleted_while_used(api, template):
    workflow = api.workflow(name="Onboarding")
    step = api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    usage = api.call("get", f"/templates/{template.id}/usage", status=200)
    assert usage["workflowSteps"] == [
        {"workflowId": workflow["id"], "workflowName": "Onboarding", "stepId": step["id"]}
    ]
    error = api.call("delete", f"/templates/{template.id}", status=409)["error"]
    assert "Onboarding" in error["message"]
    api.call("delete", f"/workflows/{workflow['id']}/steps/{step['id']}", status=204)
    assert api.call("get", f"/templates/{template.id}/usage", status=200)["workflowSteps"] == []
    api.call("delete", f"/templates/{template.id}", status=204)
    assert not Template.objects.exists()


def test_a_step_moved_to_another_template_frees_the_first(api, template, project):
    other = Template.objects.create(project=project.project, name="Other", from_email="hi@alice.test")
    workflow = api.workflow()
    step = api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    api.call(
        "patch",
        f"/workflows/{workflow['id']}/steps/{step['id']}",
        {"config": {"templateId": str(other.id)}},
        status=200,
    )
    api.call("delete", f"/templates/{template.id}", status=204)


def test_an_event_name_lists_the_workflows_using_it_and_stays(api, project, contact):
    Event.objects.create(project=project.project, contact=contact, name="paid")
    triggered = api.workflow(name="On payment", event="paid")
    waiting = api.workflow(name="Nudge", event="signup")
    api.step(waiting, "WAIT_FOR_EVENT", {"eventName": "paid"})
    testing = api.workflow(name="Check", event="signup")
    api.step(testing, "CONDITION", {"field": "event.paid", "operator": "triggered"})
    api.workflow(name="Unrelated", event="signup")
    usage = api.call("get", "/events/paid/usage", status=200)
    assert usage["usedInWorkflows"] == [
        {"id": triggered["id"], "name": "On payment"},
        {"id": waiting["id"], "name": "Nudge"},
        {"id": testing["id"], "name": "Check"},
    ]
    assert usage["canDelete"] is False
    api.call("delete", "/events/paid", status=409)
    assert Event.objects.filter(name="paid").exists()


def test_a_field_lists_the_workflows_using_it(api, contact):
    condition = api.workflow(name="Pro only")
    api.step(condition, "CONDITION", {"field": "data.plan.tier", "operator": "exists"})
    update = api.workflow(name="Upgrade")
    api.step(update, "UPDATE_CONTACT", {"updates": {"plan": "pro"}})
    api.workflow(name="Unrelated")
    usage = api.call("get", "/contacts/fields/data.plan/usage", status=200)
    assert usage["usedIn"]["workflows"] == [
        {"id": condition["id"], "name": "Pro only"},
        {"id": update["id"], "name": "Upgrade"},
    ]
    assert usage["canDelete"] is False
    api.call("delete", "/contacts/fields/data.plan", status=409)


def test_another_projects_workflows_are_not_listed(api, other_project, template):
    theirs = Api(client_with(other_project.keys.secret_key))
    theirs.workflow(name="Theirs", event="paid")
    assert api.call("get", "/events/paid/usage", status=200)["usedInWorkflows"] == []


def test_deleting_a_project_removes_its_workflows_and_the_templates_they_use(api, project, template, contact):
    workflow = api.workflow()
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    api.enable(workflow)
    api.start(workflow, contact)
    project.project.delete()
    assert not Template.objects.exists()
