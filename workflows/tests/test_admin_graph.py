"""The console's workflow page: the graph drawn with each step's counts after real executions, every graph edit
through the admin's forms landing as the API's would (refusals at the field), the change permission, another
workflow's steps out of reach, and a page whose queries do not grow with the steps."""

import re
import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.models import User
from contacts.models import Contact
from workflows.models import Workflow, WorkflowExecution, WorkflowStep, WorkflowTransition

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"


def page_of(workflow: dict) -> str:
    return f"/admin/workflows/workflow/{workflow['id']}/change/"


def drawing(html: str) -> ET.Element:
    return ET.fromstring(re.search(r'<svg class="workflow-graph".*?</svg>', html, re.S).group(0))


def boxes(svg: ET.Element) -> dict:
    """Step name -> the lines of its box (name, type, summary, counts)."""
    found = {}
    for group in svg.iter(f"{SVG}g"):
        if group.get("class") == "workflow-step":
            lines = [text.text for text in group.iter(f"{SVG}text")]
            found[lines[0]] = lines[1:]
    return found


def arrow_labels(svg: ET.Element) -> list:
    return sorted(g.get("data-label") for g in svg.iter(f"{SVG}g") if g.get("class") == "workflow-transition")


def branching(api, template) -> dict:
    """TRIGGER(signup) -> "Pro plan?" -yes-> "Welcome pro"; -no-> "Wait for purchase" -EVENT-> "Bought",
    -TIMEOUT-> "Gave up"; enabled."""
    workflow = api.workflow(name="Onboarding")
    condition = api.step(
        workflow, "CONDITION", {"field": "data.plan", "operator": "equals", "value": "pro"}, name="Pro plan?"
    )
    send = api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)}, name="Welcome pro", autoConnect=False)
    wait = api.step(
        workflow,
        "WAIT_FOR_EVENT",
        {"eventName": "purchase", "timeout": 86400},
        name="Wait for purchase",
        autoConnect=False,
    )
    bought = api.step(workflow, "EXIT", {"reason": "Bought"}, name="Bought", autoConnect=False)
    gave_up = api.step(workflow, "EXIT", name="Gave up", autoConnect=False)
    api.link(workflow, condition, send, branch="yes")
    api.link(workflow, condition, wait, branch="no")
    api.link(workflow, wait, bought, waitOutcome="EVENT")
    api.link(workflow, wait, gave_up, waitOutcome="TIMEOUT")
    api.enable(workflow)
    return workflow


def test_the_graph_draws_every_step_and_labelled_transition_with_counts_of_real_executions(
    admin_client, api, template, project, track, smtp_sink
):
    workflow = branching(api, template)
    for email, plan in (("pro1@example.com", "pro"), ("free1@example.com", "free"), ("free2@example.com", "free")):
        Contact.objects.create(project=project.project, email=email, data={"plan": plan})
        track(email, "signup")
    track("free2@example.com", "purchase")
    # The next welcome fails: its sender is no longer on a verified domain.
    template.from_email = "hello@unverified.test"
    template.save()
    Contact.objects.create(project=project.project, email="pro2@example.com", data={"plan": "pro"})
    track("pro2@example.com", "signup")
    assert sorted(WorkflowExecution.objects.values_list("contact__email", "status")) == [
        ("free1@example.com", "WAITING"),
        ("free2@example.com", "EXITED"),
        ("pro1@example.com", "COMPLETED"),
        ("pro2@example.com", "FAILED"),
    ]

    svg = drawing(admin_client.get(page_of(workflow)).content.decode())
    assert boxes(svg) == {
        "Trigger: signup": ["TRIGGER", "on signup", "4 in · 0 waiting · 4 done · 0 failed"],
        "Pro plan?": ["CONDITION", "data.plan equals pro", "4 in · 0 waiting · 4 done · 0 failed"],
        "Welcome pro": ["SEND_EMAIL", "Welcome mail to the contact", "2 in · 0 waiting · 1 done · 1 failed"],
        "Wait for purchase": ["WAIT_FOR_EVENT", "for purchase, at most 1 day", "2 in · 1 waiting · 1 done · 0 failed"],
        "Bought": ["EXIT", "Bought", "1 in · 0 waiting · 1 done · 0 failed"],
        "Gave up": ["EXIT", "end", "0 in · 0 waiting · 0 done · 0 failed"],
    }
    assert arrow_labels(svg) == ["", "EVENT", "TIMEOUT", "no", "yes"]
    # Top-down by depth: each arrow leaves a box's bottom for a lower box's top.
    for path in svg.iter(f"{SVG}path"):
        numbers = [float(n) for n in re.findall(r"-?[\d.]+", path.get("d"))]
        if len(numbers) == 8:
            assert numbers[7] > numbers[1]


def test_the_page_lists_the_latest_executions_with_where_each_is_now(admin_client, api, template, project, track):
    workflow = branching(api, template)
    for number in range(23):
        Contact.objects.create(project=project.project, email=f"c{number:02}@example.com", data={"plan": "free"})
        track(f"c{number:02}@example.com", "signup")
    html = admin_client.get(page_of(workflow)).content.decode()
    listed = re.findall(r">(c\d\d@example.com)</a></td>\s*<td>WAITING</td>\s*<td>Wait for purchase</td>", html)
    assert listed == [f"c{number:02}@example.com" for number in range(22, 2, -1)]
    assert "Older executions" in html
    older = admin_client.get(page_of(workflow) + "?executions_page=2").content.decode()
    assert re.findall(r">(c\d\d@example.com)</a>", older) == ["c02@example.com", "c01@example.com", "c00@example.com"]
    assert "Newer executions" in older and "Older executions" not in older


# Edits ------------------------------------------------------------------------------------------------------------


def shape(workflow_id) -> tuple:
    """The graph as a person reads it: (name, type, config) of each step, (from, to, label) of each transition."""
    steps = WorkflowStep.objects.filter(workflow_id=workflow_id)
    names = {step.id: step.name for step in steps}
    return (
        sorted((step.name, step.type, sorted(step.config.items())) for step in steps),
        sorted(
            (names[t.from_step_id], names[t.to_step_id], t.branch or t.wait_outcome)
            for t in WorkflowTransition.objects.filter(workflow_id=workflow_id)
        ),
    )


def step_id(workflow: dict, name: str) -> str:
    return str(WorkflowStep.objects.get(workflow_id=workflow["id"], name__startswith=name).id)


def transition_id(workflow: dict, label: str) -> str:
    found = WorkflowTransition.objects.filter(workflow_id=workflow["id"])
    return str((found.get(branch=label) if label in ("yes", "no") else found.get(wait_outcome=label)).id)


def post(client, workflow: dict, route: str, data: dict, *, status: int = 302):
    response = client.post(f"/admin/workflows/workflow/{workflow['id']}/{route}", data)
    assert response.status_code == status, response.content.decode()[:2000]
    return response


def test_each_admin_edit_changes_the_graph_as_the_api_would(admin_client, api, template):
    by_admin, by_api = api.workflow(name="By admin"), api.workflow(name="By API")
    condition = {"field": "data.plan", "operator": "equals", "value": "pro"}

    # A CONDITION, connected after the trigger; a DELAY and an EXIT for its branches, not connected.
    typed_condition = {"condition_field": "data.plan", "condition_operator": "equals", "condition_value": "pro"}
    post(
        admin_client,
        by_admin,
        "steps/add/",
        {"step_type": "CONDITION", "name": "Pro?", **typed_condition, "auto_connect": "on"},
    )
    post(
        admin_client,
        by_admin,
        "steps/add/",
        {"step_type": "DELAY", "name": "Pause", "delay_amount": "2", "delay_unit": "days"},
    )
    post(
        admin_client,
        by_admin,
        "steps/add/",
        {"step_type": "SEND_EMAIL", "name": "Welcome", "email_template": template.id, "email_recipient": "CONTACT"},
    )
    post(admin_client, by_admin, "steps/add/", {"step_type": "EXIT", "name": "Done", "exit_reason": ""})
    api_condition = api.step(by_api, "CONDITION", condition, name="Pro?")
    api_pause = api.step(by_api, "DELAY", {"amount": 2, "unit": "days"}, name="Pause", autoConnect=False)
    api_welcome = api.step(by_api, "SEND_EMAIL", {"templateId": str(template.id)}, name="Welcome", autoConnect=False)
    api_done = api.step(by_api, "EXIT", name="Done", autoConnect=False)
    assert shape(by_admin["id"])[0] == shape(by_api["id"])[0]

    # Transitions: yes -> Pause -> Welcome, no -> Done.
    for source, target, branch in (("Pro?", "Pause", "yes"), ("Pause", "Welcome", ""), ("Pro?", "Done", "no")):
        data = {"from_step": step_id(by_admin, source), "to_step": step_id(by_admin, target), "branch": branch}
        post(admin_client, by_admin, "transitions/add/", data)
    api.link(by_api, api_condition, api_pause, branch="yes")
    api.link(by_api, api_pause, api_welcome)
    api.link(by_api, api_condition, api_done, branch="no")
    assert shape(by_admin["id"]) == shape(by_api["id"])

    # A step renamed and reconfigured; the DELAY spliced out; the "no" transition removed.
    data = {"name": "Three days", "delay_amount": "3", "delay_unit": "days"}
    post(admin_client, by_admin, f"steps/{step_id(by_admin, 'Pause')}/change/", data)
    api.call(
        "patch",
        f"/workflows/{by_api['id']}/steps/{api_pause['id']}",
        {"name": "Three days", "config": {"amount": 3, "unit": "days"}},
        status=200,
    )
    assert shape(by_admin["id"]) == shape(by_api["id"])
    post(admin_client, by_admin, f"steps/{step_id(by_admin, 'Three days')}/delete/", {"splice": "on"})
    post(admin_client, by_admin, f"transitions/{transition_id(by_admin, 'no')}/delete/", {})
    api.call("delete", f"/workflows/{by_api['id']}/steps/{api_pause['id']}?splice=true", status=204)
    no = next(t for t in api.get(by_api)["transitions"] if t["branch"] == "no")
    api.call("delete", f"/workflows/{by_api['id']}/transitions/{no['id']}", status=204)
    assert shape(by_admin["id"]) == shape(by_api["id"])
    assert shape(by_admin["id"])[1] == [("Pro?", "Welcome", "yes"), ("Trigger: signup", "Pro?", "")]

    # Without splice, a step goes with what only it leads to.
    post(admin_client, by_admin, f"steps/{step_id(by_admin, 'Pro?')}/delete/", {})
    assert shape(by_admin["id"])[0] == [("Done", "EXIT", []), ("Trigger: signup", "TRIGGER", [("eventName", "signup")])]

    # Enabled from the workflow's own form once complete, as before.
    post(admin_client, by_admin, f"steps/{step_id(by_admin, 'Done')}/delete/", {})
    post(
        admin_client,
        by_admin,
        "steps/add/",
        {"step_type": "SEND_EMAIL", "email_template": template.id, "auto_connect": "on"},
    )
    form = {"name": "By admin", "description": "", "event_name": "signup", "enabled": "on", "allow_reentry": ""}
    post(admin_client, by_admin, "change/", form)
    assert Workflow.objects.get(id=by_admin["id"]).enabled is True


REFUSALS = [
    # (what is posted, the form's field, the message shown there)
    ("steps/add/", {"step_type": "DELAY", "delay_amount": "-1", "delay_unit": "days"}, "delay_amount", "Must be greater than 0"),
    ("steps/add/", {"step_type": "DELAY", "delay_amount": "400", "delay_unit": "days"}, "delay_amount", "A delay may be at most 365 days"),
    ("steps/add/", {"step_type": "DELAY", "delay_unit": "days"}, "delay_amount", "Required"),
    ("steps/add/", {"step_type": "DELAY", "delay_amount": "two"}, "delay_amount", "Enter a number."),
    ("steps/add/", {"step_type": "SEND_EMAIL", "email_recipient": "CONTACT"}, "email_template", "Required"),
    (
        "steps/add/",
        {"step_type": "SEND_EMAIL", "email_template": "{template}", "email_recipient": "CUSTOM", "email_address": "nope"},
        "email_address",
        "A CUSTOM recipient needs a valid email address",
    ),
    (
        "steps/add/",
        {"step_type": "TRIGGER"},
        "step_type",
        "Select a valid choice. TRIGGER is not one of the available choices.",
    ),
    ("steps/add/", {"step_type": "WAIT_FOR_EVENT", "wait_timeout": "1"}, "wait_event_name", "Required"),
    (
        "steps/add/",
        {"step_type": "WAIT_FOR_EVENT", "wait_event_name": "purchase", "wait_timeout": "400", "wait_timeout_unit": "days"},
        "wait_timeout",
        "Must be 1 to 31,536,000 seconds (365 days)",
    ),
    (
        "steps/add/",
        {"step_type": "WAIT_FOR_EVENT", "wait_event_name": "purchase", "wait_timeout": "0.5", "wait_timeout_unit": "seconds"},
        "wait_timeout",
        "Expected an integer number of seconds",
    ),
    ("steps/add/", {"step_type": "CONDITION", "condition_field": "data.plan", "condition_operator": "equals"}, "condition_value", "Required"),
    (
        "steps/add/",
        {"step_type": "CONDITION", "condition_field": "subscribed", "condition_operator": "equals", "condition_value": "yes"},
        "condition_value",
        "Expected boolean",
    ),
    (
        "steps/add/",
        {"step_type": "CONDITION", "condition_field": "data.plan", "condition_operator": "within", "condition_value": "3"},
        "condition_unit",
        "Required: one of days, hours, minutes",
    ),
    ("steps/add/", {"step_type": "WEBHOOK", "webhook_url": "ftp://example.com"}, "webhook_url", "The URL must start with http:// or https://"),
    (
        "steps/add/",
        {"step_type": "WEBHOOK", "webhook_url": "https://example.com", "webhook_headers": "Bad Name: x"},
        "webhook_headers",
        "Bad Name: Not a valid header name",
    ),
    (
        "steps/add/",
        {"step_type": "WEBHOOK", "webhook_url": "https://example.com", "webhook_headers": "no colon"},
        "webhook_headers",
        "Write each header as Name: value",
    ),
    (
        "steps/add/",
        {"step_type": "WEBHOOK", "webhook_url": "https://example.com", "webhook_body": "3"},
        "webhook_body",
        "Expected a JSON object or array",
    ),
    ("steps/add/", {"step_type": "WEBHOOK", "webhook_url": "https://example.com", "webhook_body": '{"a": '}, "webhook_body", "Enter a valid JSON."),
    ("steps/add/", {"step_type": "UPDATE_CONTACT", "update_data": "[1]"}, "update_data", "Expected object"),
    ("steps/add/", {"step_type": "UPDATE_CONTACT", "update_subscription": "none"}, None, "Give `updates` or a `subscriptionAction`"),
    ("steps/add/", {"step_type": "EXIT", "exit_reason": "x" * 501}, "exit_reason", "Must be at most 500 characters"),
    (
        "steps/{wait}/change/",
        {"name": "Wait", "wait_event_name": "purchase"},
        "wait_timeout",
        "The step has a TIMEOUT transition: delete it before removing the timeout",
    ),
    ("steps/{condition}/delete/", {"splice": "on"}, "splice", "A step with more than one way out"),
    ("steps/{trigger}/delete/", {}, None, "The trigger step cannot be deleted: every workflow starts with it"),
    (
        "transitions/add/",
        {"from_step": "{exit}", "to_step": "{condition}"},
        "from_step",
        "An EXIT step ends the workflow: it has no outgoing transitions",
    ),
    (
        "transitions/add/",
        {"from_step": "{wait}", "to_step": "{condition}"},
        "to_step",
        "This connection would create a loop in the workflow",
    ),
    (
        "transitions/add/",
        {"from_step": "{condition}", "to_step": "{exit}"},
        "branch",
        "A transition out of a CONDITION step needs a branch: yes or no",
    ),
    (
        "transitions/add/",
        {"from_step": "{condition}", "to_step": "{exit}", "branch": "no"},
        "branch",
        'The "no" branch of this step is already connected',
    ),
    (
        "transitions/add/",
        {"from_step": "{trigger}", "to_step": "{exit}", "wait_outcome": "TIMEOUT"},
        "wait_outcome",
        "Only a WAIT_FOR_EVENT step has wait outcomes",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("route", "data", "field", "message"), REFUSALS)
def test_a_refused_edit_shows_the_services_message_at_the_field_and_changes_nothing(
    admin_client, api, template, route, data, field, message
):
    workflow = branching(api, template)
    ids = {
        "trigger": step_id(workflow, "Trigger"),
        "condition": step_id(workflow, "Pro plan?"),
        "wait": step_id(workflow, "Wait for purchase"),
        "exit": step_id(workflow, "Gave up"),
        "template": str(template.id),
    }
    before = shape(workflow["id"])
    # "{condition}" and the like name a step of the workflow.
    data = {key: ids.get(value.strip("{}"), value) for key, value in data.items()}
    response = post(admin_client, workflow, route.format(**ids), data, status=200)
    errors = response.context["form"].errors.get(field or "__all__", [])
    assert any(error.startswith(message) for error in errors), errors
    assert 'class="errorlist' in response.content.decode()
    assert shape(workflow["id"]) == before


# Who may edit, and what ---------------------------------------------------------------------------------------------


def staff(*codenames: str) -> Client:
    user = User.objects.create_user(email=f"staff-{len(codenames)}@example.test", password="x")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_without_the_change_permission_the_graph_is_read_only(api, template):
    workflow = branching(api, template)
    viewer = staff("view_workflow")
    html = viewer.get(page_of(workflow)).content.decode()
    assert "Pro plan?" in boxes(drawing(html))
    assert "Add a step" not in html and "/steps/" not in html and "/transitions/" not in html
    before = shape(workflow["id"])
    condition = step_id(workflow, "Pro plan?")
    for route, data in (
        ("steps/add/", {"step_type": "EXIT", "exit_reason": "Done"}),
        (f"steps/{condition}/change/", {"name": "Renamed", "condition_value": "free"}),
        (f"steps/{condition}/delete/", {}),
        ("transitions/add/", {"from_step": condition, "to_step": step_id(workflow, "Bought"), "branch": "yes"}),
        (f"transitions/{transition_id(workflow, 'yes')}/delete/", {}),
    ):
        assert viewer.get(f"/admin/workflows/workflow/{workflow['id']}/{route}").status_code == 403
        assert viewer.post(f"/admin/workflows/workflow/{workflow['id']}/{route}", data).status_code == 403
    assert shape(workflow["id"]) == before

    editor = staff("view_workflow", "change_workflow")
    assert "Add a step" in editor.get(page_of(workflow)).content.decode()
    typed = {"condition_field": "data.plan", "condition_operator": "equals", "condition_value": "free"}
    post(editor, workflow, f"steps/{condition}/change/", {"name": "Renamed", **typed})
    changed = WorkflowStep.objects.get(id=condition)
    assert (changed.name, changed.config["value"]) == ("Renamed", "free")


def test_another_workflows_steps_cannot_be_targeted(admin_client, api, template, other_project):
    from workflows.services import step_add, workflow_create

    workflow = branching(api, template)
    theirs = workflow_create(project=other_project.project, name="Bob's", event_name="signup")
    their_exit = step_add(workflow=theirs, step_type="EXIT", config={}, name="Bob's exit")
    their_trigger = theirs.steps.get(type="TRIGGER")
    before, their_before = shape(workflow["id"]), shape(theirs.id)

    data = {"from_step": step_id(workflow, "Gave up"), "to_step": str(their_exit.id)}
    response = post(
        admin_client, workflow, "transitions/add/", {**data, "from_step": step_id(workflow, "Welcome")}, status=200
    )
    assert response.context["form"].errors["to_step"] == [
        "Select a valid choice. That choice is not one of the available choices."
    ]
    response = post(
        admin_client,
        workflow,
        "transitions/add/",
        {"from_step": str(their_trigger.id), "to_step": step_id(workflow, "Bought")},
        status=200,
    )
    assert "from_step" in response.context["form"].errors
    for route in (f"steps/{their_exit.id}/change/", f"steps/{their_exit.id}/delete/"):
        assert admin_client.get(f"/admin/workflows/workflow/{workflow['id']}/{route}").status_code == 404
        assert (
            admin_client.post(f"/admin/workflows/workflow/{workflow['id']}/{route}", {"name": "x"}).status_code == 404
        )
    their_transition = WorkflowTransition.objects.get(workflow=theirs)
    path = f"/admin/workflows/workflow/{workflow['id']}/transitions/{their_transition.id}/delete/"
    assert admin_client.post(path, {}).status_code == 404
    assert (shape(workflow["id"]), shape(theirs.id)) == (before, their_before)


# Cost ---------------------------------------------------------------------------------------------------------------


def test_the_page_reads_a_fixed_number_of_queries_however_many_steps(
    admin_client, api, template, project, track, django_assert_max_num_queries
):
    small = branching(api, template)
    Contact.objects.create(project=project.project, email="ann@example.com", data={"plan": "free"})
    track("ann@example.com", "signup")
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(page_of(small)).status_code == 200
    # Counted now: every request clears the connection's log of queries.
    small_queries = len(few)

    big = api.workflow(name="Long", event="other")
    for number in range(15):
        api.step(big, "DELAY", {"amount": number + 1, "unit": "minutes"}, name=f"Pause {number}")
    api.step(big, "SEND_EMAIL", {"templateId": str(template.id)}, name="Last")
    api.enable(big)
    track("ann@example.com", "other")
    with django_assert_max_num_queries(small_queries):
        html = admin_client.get(page_of(big)).content.decode()
    assert len(boxes(drawing(html))) == 17
