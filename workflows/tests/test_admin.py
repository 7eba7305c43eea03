"""Admin: the graph reads as a list of steps in order, enabling meets the API's rule, executions filter and
cancel. (The drawing and the graph's edit forms: test_admin_graph.py.)"""

import re

import pytest

from workflows.models import Workflow, WorkflowExecution, WorkflowStepExecution

pytestmark = pytest.mark.django_db


def test_the_workflow_page_lists_the_graph_in_order(admin_client, api):
    workflow = api.workflow(name="Onboarding")
    api.step(workflow, "CONDITION", {"field": "data.plan", "operator": "equals", "value": "pro"}, name="Pro?")
    done = api.step(workflow, "EXIT", name="Done", autoConnect=False)
    condition = api.get(workflow)["steps"][1]
    api.link(workflow, condition, done, branch="yes")

    assert "Onboarding" in admin_client.get("/admin/workflows/workflow/").content.decode()
    page = admin_client.get(f"/admin/workflows/workflow/{workflow['id']}/change/").content.decode()
    steps = re.search(r'<ul class="workflow-graph-list" id="workflow-steps">(.*?)</ul>', page, re.S).group(1)
    items = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", item)).strip() for item in steps.split("</li>")[:-1]]
    assert [item.split(" Change")[0] for item in items] == [
        "Trigger: signup (TRIGGER): on signup. 0 in · 0 waiting · 0 done · 0 failed. Leads to: Pro?.",
        "Pro? (CONDITION): data.plan equals pro. 0 in · 0 waiting · 0 done · 0 failed. Leads to: yes: Done.",
        "Done (EXIT): end. 0 in · 0 waiting · 0 done · 0 failed. Leads to: end.",
    ]


def form(workflow, **changes):
    event_name = workflow["triggerConfig"]["eventName"] or ""
    return {"name": workflow["name"], "description": "", "event_name": event_name, "allow_reentry": "", **changes}


def test_enabling_an_incomplete_workflow_in_the_admin_is_refused(admin_client, api, template):
    workflow = api.workflow()
    path = f"/admin/workflows/workflow/{workflow['id']}/change/"
    page = admin_client.post(path, form(workflow, enabled="on")).content.decode()
    assert "The trigger is not connected to a first step" in page
    assert Workflow.objects.get().enabled is False
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    assert admin_client.post(path, form(workflow, enabled="on", name="Renamed")).status_code == 302
    saved = Workflow.objects.get()
    assert (saved.enabled, saved.name) == (True, "Renamed")


def test_executions_filter_show_their_steps_and_cancel(admin_client, live, api, contact):
    execution = api.start(live, contact)
    row = WorkflowExecution.objects.get()
    WorkflowStepExecution.objects.create(execution=row, step=row.current_step, status="COMPLETED")

    listing = admin_client.get(
        f"/admin/workflows/workflowexecution/?status__exact=RUNNING&workflow__id__exact={live['id']}"
    )
    assert "ann@example.com" in listing.content.decode()
    assert (
        "ann@example.com"
        not in admin_client.get("/admin/workflows/workflowexecution/?status__exact=WAITING").content.decode()
    )
    page = admin_client.get(f"/admin/workflows/workflowexecution/{execution['id']}/change/").content.decode()
    assert "Trigger: signup" in page and "COMPLETED" in page

    response = admin_client.post(
        "/admin/workflows/workflowexecution/", {"action": "cancel", "_selected_action": [execution["id"]]}, follow=True
    )
    assert "Cancelled 1 execution(s)." in response.content.decode()
    row.refresh_from_db()
    assert (row.status, row.exit_reason) == ("CANCELLED", "Cancelled by user")


def test_a_workflow_added_in_the_admin_is_the_apis_with_its_trigger(admin_client, api, project, template):
    added = admin_client.post(
        "/admin/workflows/workflow/add/", {"project": project.project.pk, "name": "Welcome", "description": ""}
    )
    assert added.status_code == 302
    workflow = Workflow.objects.get()
    assert (workflow.enabled, workflow.event_name) == (False, "")
    assert list(workflow.steps.values_list("type", "name")) == [("TRIGGER", "Trigger")]

    as_api = api.get({"id": str(workflow.id)})
    path = f"/admin/workflows/workflow/{workflow.id}/change/"
    api.step(as_api, "SEND_EMAIL", {"templateId": str(template.id)})
    refused = admin_client.post(path, form(as_api, enabled="on")).content.decode()
    assert "An EVENT trigger needs an event name" in refused  # at the event name, with nothing saved
    assert Workflow.objects.get().enabled is False

    # The trigger and the enabling in one change, as PATCH {triggerConfig, enabled} does.
    assert admin_client.post(path, form(as_api, enabled="on", event_name="signed-up")).status_code == 302
    workflow = Workflow.objects.get()
    assert (workflow.enabled, workflow.event_name) == (True, "signed-up")
    trigger = workflow.steps.get(type="TRIGGER")
    assert (trigger.name, trigger.config) == ("Trigger: signed-up", {"eventName": "signed-up"})
