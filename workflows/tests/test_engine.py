"""The engine, driven through the API: starts (manual and by events), every step type, waits and their resumes,
finishing states, and the claims that keep a step from running twice. Mail goes to a real SMTP server on loopback,
webhooks to a real HTTP receiver on loopback."""

import json
import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from config.tests.processes import wait_until
from conftest import behind_a_lock, client_with
from contacts.models import Contact, Event
from core.standard_webhooks import signature_headers
from messaging.models import Email, EmailType, Template
from workflows.dispatch import executions_due_claim
from workflows.engine import executions_advance, executions_claim, lease_seconds, outcomes_record
from workflows.models import WorkflowExecution, WorkflowStepExecution
from workflows.runs import Outcome
from workflows.steps import steps_run
from workflows.tasks import sweep_executions_task
from workflows.tests.conftest import Api
from workflows.tests.receivers import Answer, redirect
from workflows.webhooks import webhook_call_limit

pytestmark = pytest.mark.django_db


def detail(api, workflow, execution) -> dict:
    return api.call("get", f"/workflows/{workflow['id']}/executions/{execution['id']}", status=200)


def steps_of(api, workflow, execution) -> dict:
    """Step name -> its step execution, as the API writes them."""
    return {item["step"]["name"]: item for item in detail(api, workflow, execution)["stepExecutions"]}


def time_passes(seconds: float) -> None:
    """Move every pause and lease `seconds` earlier, as if that much time went by."""
    for model, field in ((WorkflowExecution, "resume_at"), (WorkflowStepExecution, "scheduled_for")):
        for row in model.objects.exclude(**{f"{field}__isnull": True}):
            setattr(row, field, getattr(row, field) - timedelta(seconds=seconds))
            row.save(update_fields=[field])


def sweep(committed) -> int:
    return committed(sweep_executions_task)


@pytest.fixture
def start(api, committed):
    def run(workflow, contact, **body):
        return committed(lambda: api.start(workflow, contact, **body))

    return run


# Starts -------------------------------------------------------------------------------------------------------------


def test_a_manual_start_runs_to_the_end_and_the_email_reaches_the_smtp_server(live, api, start, contact, smtp_sink):
    execution = start(live, contact, context={"source": "admin"})
    done = detail(api, live, execution)
    assert done["status"] == "COMPLETED" and done["completedAt"] and done["currentStep"]["type"] == "SEND_EMAIL"
    steps = {item["step"]["type"]: item for item in done["stepExecutions"]}
    assert steps["TRIGGER"]["status"] == "COMPLETED"
    send = steps["SEND_EMAIL"]
    assert send["status"] == "COMPLETED" and send["error"] is None
    email = Email.objects.get(id=send["output"]["emailId"])
    assert (email.workflow_id, email.source, email.to_email) == (
        WorkflowExecution.objects.get().workflow_id,
        "workflow",
        "ann@example.com",
    )
    assert [message.rcpt_tos for message in smtp_sink.received] == [["ann@example.com"]]


def test_a_tracked_event_starts_the_workflow_with_its_data_as_context(live, api, track, smtp_sink):
    track("new@example.com", "signup", {"plan": "team"})
    execution = WorkflowExecution.objects.get()
    assert execution.status == "COMPLETED"
    assert execution.context == {"plan": "team"}
    assert execution.trigger_event_id == Event.objects.get(name="signup").id
    # Without re-entry, the contact's next signup starts nothing; other events start nothing.
    track("new@example.com", "signup")
    track("new@example.com", "login")
    assert WorkflowExecution.objects.count() == 1
    assert len(smtp_sink.received) == 1


def test_with_reentry_a_finished_contact_enters_again(live, api, track, smtp_sink):
    api.call("patch", f"/workflows/{live['id']}", {"allowReentry": True}, status=200)
    track("new@example.com", "signup")
    track("new@example.com", "signup")
    assert sorted(WorkflowExecution.objects.values_list("entry", "status")) == [(1, "COMPLETED"), (2, "COMPLETED")]


def test_one_event_never_starts_two_executions(live, api, track, committed):
    from workflows.starts import events_concern_workflows

    api.call("patch", f"/workflows/{live['id']}", {"allowReentry": True}, status=200)
    track("new@example.com", "signup")
    event = Event.objects.get(name="signup")
    committed(lambda: events_concern_workflows(project=event.project, events=[event]))
    assert WorkflowExecution.objects.count() == 1


def test_disabled_workflows_and_other_names_start_nothing(live, api, track):
    api.call("patch", f"/workflows/{live['id']}", {"enabled": False}, status=200)
    track("new@example.com", "signup")
    assert not WorkflowExecution.objects.exists()
    # Enabled again: the trigger cache follows at once.
    api.enable(live)
    track("new@example.com", "signup")
    assert WorkflowExecution.objects.count() == 1


def test_system_events_trigger_too(api, template, contact, committed):
    from contacts.services import contact_subscription_set

    workflow = api.workflow(event="contact.unsubscribed")
    api.step(workflow, "UPDATE_CONTACT", {"updates": {"left": True}})
    api.enable(workflow)
    committed(lambda: contact_subscription_set(contact=contact, subscribed=False, source="test"))
    execution = WorkflowExecution.objects.get()
    assert execution.status == "COMPLETED" and execution.context == {"source": "test"}
    contact.refresh_from_db()
    assert contact.data == {"plan": "pro", "left": True}


# DELAY and WAIT_FOR_EVENT ------------------------------------------------------------------------------------------


def test_a_delay_waits_in_the_database_and_the_sweep_resumes_it(api, template, contact, start, committed, smtp_sink):
    workflow = api.workflow()
    api.step(workflow, "DELAY", {"amount": 2, "unit": "hours"}, name="Wait")
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)}, name="Mail")
    api.enable(workflow)
    execution = start(workflow, contact)
    waiting = detail(api, workflow, execution)
    assert waiting["status"] == "WAITING" and waiting["currentStep"]["name"] == "Wait"
    wait = steps_of(api, workflow, execution)["Wait"]
    assert wait["status"] == "SCHEDULED"
    resume_at = WorkflowExecution.objects.get().resume_at
    assert abs((resume_at - timezone.now()).total_seconds() - 7200) < 60
    assert sweep(committed) == 0  # not due
    time_passes(7201)
    assert sweep(committed) == 1
    steps = steps_of(api, workflow, execution)
    assert steps["Wait"]["status"] == "COMPLETED" and steps["Wait"]["output"]["delayedUntil"]
    assert steps["Mail"]["status"] == "COMPLETED"
    assert detail(api, workflow, execution)["status"] == "COMPLETED"
    assert len(smtp_sink.received) == 1
    assert sweep(committed) == 0


@pytest.fixture
def waiting_flow(api):
    """TRIGGER -> WAIT_FOR_EVENT(purchase, 1 h) -> EVENT: UPDATE_CONTACT / TIMEOUT: EXIT."""
    workflow = api.workflow()
    wait = api.step(workflow, "WAIT_FOR_EVENT", {"eventName": "purchase", "timeout": 3600}, name="Wait")
    bought = api.step(workflow, "UPDATE_CONTACT", {"updates": {"buyer": True}}, name="Buyer", autoConnect=False)
    gave_up = api.step(workflow, "EXIT", {"reason": "No purchase"}, name="Give up", autoConnect=False)
    api.link(workflow, wait, bought, waitOutcome="EVENT")
    api.link(workflow, wait, gave_up, waitOutcome="TIMEOUT")
    api.enable(workflow)
    return workflow


def test_wait_for_event_resumes_on_the_contacts_next_event(api, waiting_flow, contact, start, track):
    execution = start(waiting_flow, contact, context={"cart": 1})
    assert detail(api, waiting_flow, execution)["status"] == "WAITING"
    assert steps_of(api, waiting_flow, execution)["Wait"]["status"] == "WAITING"
    track("someone-else@example.com", "purchase")
    track("ann@example.com", "pageview")
    assert detail(api, waiting_flow, execution)["status"] == "WAITING"
    track("ann@example.com", "purchase", {"amount": 42})
    done = detail(api, waiting_flow, execution)
    assert done["status"] == "COMPLETED"
    assert done["context"] == {"cart": 1, "amount": 42}
    wait = steps_of(api, waiting_flow, execution)["Wait"]
    assert wait["output"] == {
        "waitOutcome": "EVENT",
        "eventName": "purchase",
        "eventData": {"amount": 42},
        "receivedAt": wait["output"]["receivedAt"],
    }
    assert Contact.objects.get(id=contact.id).data["buyer"] is True


def test_wait_for_event_times_out(api, waiting_flow, contact, start, committed, track):
    execution = start(waiting_flow, contact)
    time_passes(3601)
    assert sweep(committed) == 1
    done = detail(api, waiting_flow, execution)
    assert (done["status"], done["exitReason"]) == ("EXITED", "No purchase")
    assert steps_of(api, waiting_flow, execution)["Wait"]["output"] == {"waitOutcome": "TIMEOUT"}
    # A late event changes nothing.
    track("ann@example.com", "purchase")
    assert detail(api, waiting_flow, execution)["status"] == "EXITED"


# CONDITION --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, context, branch",
    [
        ({"field": "data.plan", "operator": "equals", "value": "pro"}, {}, "yes"),
        ({"field": "data.plan", "operator": "equals", "value": "free"}, {}, "no"),
        ({"field": "context.order.total", "operator": "greaterThan", "value": 100}, {"order": {"total": 150}}, "yes"),
        ({"field": "context.order.total", "operator": "greaterThan", "value": 100}, {"order": {"total": 50}}, "no"),
        ({"field": "subscribed", "operator": "equals", "value": True}, {}, "yes"),
    ],
)
def test_a_condition_takes_its_branch(api, contact, start, config, context, branch):
    workflow = api.workflow()
    condition = api.step(workflow, "CONDITION", config, name="Check")
    yes = api.step(workflow, "EXIT", {"reason": "yes"}, name="Yes", autoConnect=False)
    no = api.step(workflow, "EXIT", {"reason": "no"}, name="No", autoConnect=False)
    api.link(workflow, condition, yes, branch="yes")
    api.link(workflow, condition, no, branch="no")
    api.enable(workflow)
    execution = start(workflow, contact, context=context)
    done = detail(api, workflow, execution)
    assert (done["status"], done["exitReason"]) == ("EXITED", branch)
    assert steps_of(api, workflow, execution)["Check"]["output"] == {"result": branch == "yes", "branch": branch}


# WEBHOOK ----------------------------------------------------------------------------------------------------------


def test_a_webhook_step_posts_the_signed_default_body(api, contact, start, receiver, allow_loopback, project):
    from accounts.tenancy.services import project_webhook_secret

    workflow = api.workflow()
    api.step(workflow, "WEBHOOK", {"url": receiver.url("/hook/{{ plan }}")}, name="Call")
    api.enable(workflow)
    execution = start(workflow, contact, context={"orderId": 7})
    [request] = receiver.requests
    assert (request.method, request.path) == ("POST", "/hook/pro")
    payload = json.loads(request.body)
    assert payload == {
        "contact": {"id": str(contact.id), "email": "ann@example.com", "subscribed": True, "data": {"plan": "pro"}},
        "workflow": {"id": workflow["id"], "name": "Welcome"},
        "execution": {"id": execution["id"], "startedAt": execution["startedAt"]},
        "context": {"orderId": 7},
    }
    secret = project_webhook_secret(project=project.project)
    expected = signature_headers(
        secret=secret, webhook_id=request.headers["webhook-id"], timestamp=int(request.headers["webhook-timestamp"]),
        body=request.body,
    )  # fmt: skip
    assert request.headers["webhook-signature"] == expected["webhook-signature"]
    call = steps_of(api, workflow, execution)["Call"]
    assert call["status"] == "COMPLETED"
    assert call["output"] == {
        "url": receiver.url("/hook/pro"),
        "method": "POST",
        "statusCode": 200,
        "success": True,
        "response": "ok",
        "attempts": 1,
    }
    assert detail(api, workflow, execution)["status"] == "COMPLETED"


def test_a_webhook_renders_headers_and_body_strings(api, contact, start, receiver, allow_loopback):
    workflow = api.workflow()
    config = {
        "url": receiver.url("/x"),
        "method": "PUT",
        "headers": {"X-Plan": "{{ plan }}"},
        "body": {"who": "{{ email }}", "items": ["{{ context.sku }}", 3]},
    }
    api.step(workflow, "WEBHOOK", config)
    api.enable(workflow)
    start(workflow, contact, context={"sku": "A-1"})
    [request] = receiver.requests
    assert request.method == "PUT" and request.headers["x-plan"] == "pro"
    assert json.loads(request.body) == {"who": "ann@example.com", "items": ["A-1", 3]}


def test_a_failing_webhook_is_retried_from_resume_times_then_the_execution_goes_on(
    api, contact, start, receiver, allow_loopback, committed
):
    receiver.answers["/down"] = Answer(status=503, body=b"busy")
    workflow = api.workflow()
    api.step(workflow, "WEBHOOK", {"url": receiver.url("/down")}, name="Call")
    api.enable(workflow)
    execution = start(workflow, contact)
    for attempt in (1, 2, 3):
        assert len(receiver.requests) == attempt
        call = steps_of(api, workflow, execution)["Call"]
        assert call["status"] == "SCHEDULED" and call["output"]["attempts"] == attempt
        assert detail(api, workflow, execution)["status"] == "WAITING"
        time_passes(30)
        sweep(committed)
    assert len(receiver.requests) == 4
    assert len({request.headers["webhook-id"] for request in receiver.requests}) == 1
    call = steps_of(api, workflow, execution)["Call"]
    assert call["status"] == "COMPLETED"
    assert call["output"]["success"] is False and call["output"]["statusCode"] == 503
    assert call["output"]["response"] == "busy"
    assert detail(api, workflow, execution)["status"] == "COMPLETED"


def test_a_webhook_to_a_hostile_target_is_refused_at_once(api, contact, start, receiver):
    """No exemption for loopback: the guard refuses the address, nothing connects, nothing is retried."""
    workflow = api.workflow()
    api.step(workflow, "WEBHOOK", {"url": receiver.url("/admin")}, name="Call")
    api.enable(workflow)
    execution = start(workflow, contact)
    assert receiver.requests == [] and receiver.connections == 0
    call = steps_of(api, workflow, execution)["Call"]
    assert call["status"] == "COMPLETED"
    assert call["output"]["success"] is False and call["output"]["statusCode"] is None
    assert "refused" in call["output"]["error"]
    assert detail(api, workflow, execution)["status"] == "COMPLETED"


def test_a_webhook_redirected_to_another_origin_fails_on_the_step_without_retries(
    api, contact, start, receiver, start_receiver, allow_loopback
):
    """The step's headers and signature are for its own receiver: a redirect elsewhere is not followed, and trying
    again would meet the same redirect."""
    elsewhere = start_receiver()
    receiver.answers["/hook"] = redirect(elsewhere.url("/collect"), status=307)
    workflow = api.workflow()
    api.step(workflow, "WEBHOOK", {"url": receiver.url("/hook"), "headers": {"X-Api-Token": "t0k3n"}}, name="Call")
    api.enable(workflow)
    execution = start(workflow, contact)
    assert elsewhere.requests == [] and len(receiver.requests) == 1
    call = steps_of(api, workflow, execution)["Call"]
    assert call["status"] == "COMPLETED" and call["output"]["attempts"] == 1
    assert call["output"]["success"] is False and call["output"]["statusCode"] is None
    assert call["output"]["error"] == (
        f"refused: a redirect to another origin (http://127.0.0.1:{elsewhere.port}) is not followed"
    )
    assert detail(api, workflow, execution)["status"] == "COMPLETED"


def test_a_rendered_url_the_check_refuses_is_not_called(api, contact, start, connections):
    """Liquid may fill in any part of the URL: the rendered one is checked again (here it gains user-info)."""
    contact.data = {"plan": "pro", "target": "user:secret@evil.test"}
    contact.save()
    workflow = api.workflow()
    api.step(workflow, "WEBHOOK", {"url": "https://{{ target }}/x"}, name="Call")
    api.enable(workflow)
    execution = start(workflow, contact)
    output = steps_of(api, workflow, execution)["Call"]["output"]
    assert output["success"] is False and "refused" in output["error"]
    assert connections == []


# SEND_EMAIL, UPDATE_CONTACT, EXIT, failures -----------------------------------------------------------------------


def test_the_template_renders_contact_variables_and_context(api, project, contact, start, smtp_sink):
    template = Template.objects.create(
        project=project.project, name="Order", subject="Order {{ event.orderId }} for {{ plan }}",
        body="<p>{{ context.orderId }}</p>", from_email="hello@alice.test", type=EmailType.TRANSACTIONAL,
    )  # fmt: skip
    workflow = api.workflow()
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
    api.enable(workflow)
    start(workflow, contact, context={"orderId": "A7"})
    email = Email.objects.get()
    assert email.subject == "Order A7 for pro" and "<p>A7</p>" in email.html
    # Context is the email's, never stored on the contact.
    assert Contact.objects.get(id=contact.id).data == {"plan": "pro"}


def test_one_task_sends_each_execution_of_its_batch_its_own_email_once(api, project, committed, smtp_sink):
    """Executions handed over together are claimed, sent and recorded together: each contact gets the email
    rendered with its own data and context (an unsubscribed one's marketing mail is stored SUPPRESSED), keyed by
    its step execution, and a second run of the same batch finds every email and stores none again."""
    template = Template.objects.create(
        project=project.project, name="News", subject="{{ plan }} {{ event.n }}", body="<p>x</p>",
        from_email="hello@alice.test", type=EmailType.MARKETING,
    )  # fmt: skip
    workflow = api.workflow()
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)}, name="Mail")
    api.enable(workflow)
    plans = {"a@example.com": "free", "b@example.com": "pro", "c@example.com": "team"}
    contacts = [
        Contact.objects.create(
            project=project.project, email=email, data={"plan": plan}, subscribed=email != "c@example.com"
        )
        for email, plan in plans.items()
    ]
    executions = [api.start(workflow, contact, context={"n": n}) for n, contact in enumerate(contacts)]
    ids = [execution["id"] for execution in executions]  # not committed: the one task below runs them all

    assert committed(lambda: executions_advance(execution_ids=ids)) == 3  # a SEND_EMAIL each (the TRIGGER is no run)
    emails = {email.to_email: email for email in Email.objects.all()}
    assert {address: (email.subject, email.status) for address, email in emails.items()} == {
        "a@example.com": ("free 0", "SENT"),
        "b@example.com": ("pro 1", "SENT"),
        "c@example.com": ("team 2", "SUPPRESSED"),
    }
    for execution in executions:
        assert detail(api, workflow, execution)["status"] == "COMPLETED"
        mail = steps_of(api, workflow, execution)["Mail"]
        assert emails[mail["output"]["to"]].id == uuid.UUID(mail["output"]["emailId"]) == uuid.UUID(mail["id"])
    assert sorted(message.rcpt_tos[0] for message in smtp_sink.received) == ["a@example.com", "b@example.com"]

    # The same batch again, as after its worker died having sent: the steps run again and find their emails.
    WorkflowStepExecution.objects.filter(step__name="Mail").update(status="PENDING")
    WorkflowExecution.objects.update(status="RUNNING", completed_at=None)
    assert committed(lambda: executions_advance(execution_ids=ids)) == 3
    assert Email.objects.count() == 3 and len(smtp_sink.received) == 2
    assert set(WorkflowExecution.objects.values_list("status", flat=True)) == {"COMPLETED"}


def test_a_batch_of_two_projects_sends_each_its_own_email_from_its_own_template(api, project, other_project, committed):
    """One task may carry executions of several projects: each is sent from its own project's template to its own
    contact (the same address in both), counted and listed in its project only."""
    other_api = Api(client_with(other_project.keys.secret_key))
    ids, flows = [], {}
    for persona, client, domain in ((project, api, "alice.test"), (other_project, other_api, "bob.test")):
        template = Template.objects.create(
            project=persona.project, name="Hi", subject=f"Hi from {domain}", body="<p>x</p>",
            from_email=f"hello@{domain}", type=EmailType.TRANSACTIONAL,
        )  # fmt: skip
        workflow = client.workflow()
        client.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)})
        client.enable(workflow)
        contact = Contact.objects.create(project=persona.project, email="same@example.com")
        execution = client.start(workflow, contact)
        ids.append(execution["id"])
        flows[persona.project.id] = (template.id, contact.id, workflow, execution)

    assert committed(lambda: executions_advance(execution_ids=ids)) == 2
    for project_id, (template_id, contact_id, _, _) in flows.items():
        [email] = Email.objects.filter(project_id=project_id)
        assert (email.template_id, email.contact_id) == (template_id, contact_id)
    ours, theirs = flows[project.project.id], flows[other_project.project.id]
    assert detail(api, ours[2], ours[3])["status"] == "COMPLETED"
    other_api.call("get", f"/workflows/{ours[2]['id']}/executions/{ours[3]['id']}", status=404)
    other_api.call("get", f"/workflows/{theirs[2]['id']}/executions/{ours[3]['id']}", status=404)


def test_a_custom_recipient_gets_the_contacts_variables(api, project, contact, start, smtp_sink):
    template = Template.objects.create(
        project=project.project, name="Alert", subject="{{ plan }} signup",
        body="<p>{{ email }} ({{ id }}, subscribed: {{ subscribed }}) signed up</p>",
        from_email="hello@alice.test", type=EmailType.TRANSACTIONAL,
    )  # fmt: skip
    workflow = api.workflow()
    api.step(
        workflow,
        "SEND_EMAIL",
        {"templateId": str(template.id), "recipient": {"type": "CUSTOM", "email": "ops@alice.test"}},
    )
    api.enable(workflow)
    start(workflow, contact)
    email = Email.objects.get()
    assert (email.to_email, email.subject) == ("ops@alice.test", "pro signup")
    assert [message.rcpt_tos for message in smtp_sink.received] == [["ops@alice.test"]]
    # The email is about the contact: its address, id and subscription, not the recipient's.
    assert f"{contact.email} ({contact.id}, subscribed: true) signed up" in email.html


def test_marketing_to_an_unsubscribed_contact_is_stored_suppressed_and_the_execution_goes_on(
    api, template, contact, start, smtp_sink
):
    contact.subscribed = False
    contact.save()
    workflow = api.workflow()
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)}, name="Mail")
    api.step(workflow, "UPDATE_CONTACT", {"updates": {"after": 1}}, name="After")
    api.enable(workflow)
    execution = start(workflow, contact)
    assert detail(api, workflow, execution)["status"] == "COMPLETED"
    assert Email.objects.get().status == "SUPPRESSED"
    assert steps_of(api, workflow, execution)["Mail"]["output"]["status"] == "SUPPRESSED"
    assert smtp_sink.received == []


def test_update_contact_changes_data_and_subscription_through_the_contacts_app(api, contact, start):
    workflow = api.workflow()
    config = {"updates": {"stage": "onboarded", "plan": None}, "subscriptionAction": "unsubscribe"}
    api.step(workflow, "UPDATE_CONTACT", config, name="Update")
    api.enable(workflow)
    execution = start(workflow, contact)
    contact.refresh_from_db()
    assert contact.data == {"stage": "onboarded"} and contact.subscribed is False
    assert Event.objects.filter(contact=contact, name="contact.unsubscribed", data={"source": "workflow"}).exists()
    assert steps_of(api, workflow, execution)["Update"]["output"] == {
        "updated": ["plan", "stage"],
        "subscriptionAction": "unsubscribe",
        "subscribed": False,
    }


def test_exit_ends_the_execution_with_its_reason(api, contact, start):
    workflow = api.workflow()
    api.step(workflow, "EXIT", {})
    api.enable(workflow)
    done = detail(api, workflow, start(workflow, contact))
    assert (done["status"], done["exitReason"], done["completedAt"] is not None) == (
        "EXITED",
        "Exited by an EXIT step",
        True,
    )


def test_a_step_error_fails_the_step_and_the_execution(api, live, contact, start, template):
    # The template's sender is on a domain the project no longer has verified.
    template.from_email = "hello@unverified.test"
    template.save()
    execution = start(live, contact)
    done = detail(api, live, execution)
    assert done["status"] == "FAILED" and done["exitReason"]
    failed = steps_of(api, live, execution)["Send welcome"]
    assert failed["status"] == "FAILED" and failed["error"] == done["exitReason"]
    assert not Email.objects.exists()


# Claims -----------------------------------------------------------------------------------------------------------


def test_a_duplicate_task_finds_nothing_to_claim(live, api, start, contact, smtp_sink, committed):
    execution = start(live, contact)
    assert committed(lambda: executions_advance(execution_ids=[execution["id"]])) == 0
    assert Email.objects.count() == 1


def test_a_step_whose_worker_died_runs_again_and_does_not_send_twice(live, api, contact, committed, smtp_sink):
    """The worker queued the email and died before recording the step: the lease runs out, the sweep takes the
    execution, the step runs again and finds its email."""
    execution = committed(lambda: api.start(live, contact))
    first = WorkflowExecution.objects.get(id=execution["id"])
    step = WorkflowStepExecution.objects.get(execution=first, step__type="SEND_EMAIL")
    # Rewind to "RUNNING, lease over" with the email already queued.
    step.status, step.output, step.completed_at = "RUNNING", None, None
    step.save()
    WorkflowExecution.objects.filter(id=first.id).update(
        status="RUNNING", completed_at=None, current_step=step.step, resume_at=timezone.now() - timedelta(seconds=1)
    )
    assert sweep(committed) == 1
    assert WorkflowExecution.objects.get(id=first.id).status == "COMPLETED"
    assert Email.objects.count() == 1
    assert len(smtp_sink.received) == 1


def test_a_running_step_within_its_lease_is_left_alone(live, api, contact, committed):
    execution = committed(lambda: api.start(live, contact))
    step = WorkflowStepExecution.objects.get(execution_id=execution["id"], step__type="SEND_EMAIL")
    step.status = "RUNNING"
    step.save()
    WorkflowExecution.objects.filter(id=execution["id"]).update(
        status="RUNNING", current_step=step.step, resume_at=timezone.now() + timedelta(seconds=60)
    )
    assert committed(lambda: executions_advance(execution_ids=[execution["id"]])) == 0
    assert sweep(committed) == 0


def test_a_worker_taken_over_after_its_lease_records_nothing_over_the_newer_claim(api, contact, settings):
    """A live worker outlives its step's lease: the sweep gives the step to another worker, which runs it again.
    The first one finishing afterwards (here with an error) must not write over what the newer claim records, nor
    end the execution: the step and the execution tell one story."""
    workflow = api.workflow()
    api.step(workflow, "UPDATE_CONTACT", {"updates": {"done": True}}, name="Mark")
    api.enable(workflow)
    execution = api.start(workflow, contact)  # not committed: no task runs it, the claims below do
    slow, fast = uuid.uuid4(), uuid.uuid4()
    first = executions_claim(execution_ids=[execution["id"]], token=slow)
    assert [claim.step.name for claim in first] == ["Mark"]
    time_passes(settings.WORKFLOW_STEP_LEASE_SECONDS + 1)
    assert [str(taken) for taken in executions_due_claim()] == [execution["id"]]
    second = executions_claim(execution_ids=[execution["id"]], token=fast)
    assert [claim.step_execution.id for claim in second] == [claim.step_execution.id for claim in first]

    assert outcomes_record(claims=first, outcomes=[Outcome(error="Lost the database")], token=slow) == []
    outcomes_record(claims=second, outcomes=steps_run(second), token=fast)

    done = detail(api, workflow, execution)
    assert (done["status"], done["exitReason"]) == ("COMPLETED", None)
    mark = steps_of(api, workflow, execution)["Mark"]
    assert (mark["status"], mark["error"], mark["output"]["updated"]) == ("COMPLETED", None, ["done"])
    assert Contact.objects.get(id=contact.id).data["done"] is True


def _on_a_slow_webhook(api, project, receiver, *, delay: float, count: int = 3) -> list[WorkflowExecution]:
    """`count` executions, not yet run, on a WEBHOOK step whose receiver answers after `delay` seconds."""
    receiver.answers["/slow"] = Answer(delay=delay)
    workflow = api.workflow()
    call = api.step(workflow, "WEBHOOK", {"url": receiver.url("/slow")})
    contacts = [Contact.objects.create(project=project.project, email=f"c{n}@example.com") for n in range(count)]
    return WorkflowExecution.objects.bulk_create(
        WorkflowExecution(
            project=project.project, workflow_id=workflow["id"], contact=contact, current_step_id=call["id"]
        )
        for contact in contacts
    )


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_slow_steps_renews_its_lease_and_no_sweep_takes_it_meanwhile(
    api, project, receiver, allow_loopback, settings
):
    """Webhook steps of 0.3 s each in one task, under the shortest lease their deadline allows (3.3 s): by the last
    call the first lease is over, but the task renewed it between steps, so a sweep then takes nothing and every
    step runs once."""
    if connection.vendor != "postgresql":
        pytest.skip("a sweep beside a running task needs PostgreSQL")
    settings.WORKFLOW_STEP_LEASE_SECONDS, settings.WEBHOOK_TIMEOUT_SECONDS = 0.9, 0.6
    delay = 0.3
    calls = int(lease_seconds() / delay) + 2
    executions = _on_a_slow_webhook(api, project, receiver, delay=delay, count=calls)

    def run() -> None:
        try:
            executions_advance(execution_ids=[execution.id for execution in executions])
        finally:
            connection.close()

    task = threading.Thread(target=run)
    task.start()
    wait_until(lambda: len(receiver.requests) == calls, timeout=30, what="the last call", interval=0.01)
    assert executions_due_claim() == []
    task.join()
    assert set(WorkflowExecution.objects.values_list("status", flat=True)) == {"COMPLETED"}
    assert len(receiver.requests) == calls


def test_a_steps_lease_outlasts_the_longest_webhook_call_whatever_the_setting(api, contact, settings):
    """A lease set shorter than a webhook call can take is lengthened: at the latest moment the call can end, even
    with the lease renewed as late as it can be (a third of it in, just before the step), the sweep takes
    nothing."""
    settings.WORKFLOW_STEP_LEASE_SECONDS, settings.WEBHOOK_TIMEOUT_SECONDS = 1, 5
    workflow = api.workflow()
    api.step(workflow, "WEBHOOK", {"url": "https://hooks.example.test/hook"})
    api.enable(workflow)
    execution = api.start(workflow, contact)  # not committed: no task runs it, the claim below does
    assert len(executions_claim(execution_ids=[execution["id"]], token=uuid.uuid4())) == 1

    time_passes(lease_seconds() / 3 + webhook_call_limit())
    assert executions_due_claim() == []
    time_passes(lease_seconds())
    assert [str(taken) for taken in executions_due_claim()] == [execution["id"]]


def test_a_batch_out_of_time_hands_its_executions_to_the_next_sweep(
    api, project, receiver, allow_loopback, soft_time_limit, committed
):
    """The task's soft time limit strikes while the first of three webhook calls waits for its answer: no step is
    failed for it, and the batch ends its leases at once, so the next sweep runs the three steps again (the one
    interrupted under the same webhook-id) instead of waiting out a lease."""
    ids = [execution.id for execution in _on_a_slow_webhook(api, project, receiver, delay=3)]
    soft_time_limit(0.1, when=lambda: receiver.requests)
    executions_advance(execution_ids=ids)
    assert len(receiver.requests) == 1
    assert set(WorkflowStepExecution.objects.values_list("status", flat=True)) == {"RUNNING"}
    assert not WorkflowExecution.objects.filter(resume_at__gt=timezone.now()).exists()

    receiver.answers["/slow"] = Answer()
    assert sorted(executions_due_claim()) == sorted(ids)
    committed(lambda: executions_advance(execution_ids=ids))
    assert set(WorkflowExecution.objects.values_list("status", flat=True)) == {"COMPLETED"}
    assert set(WorkflowStepExecution.objects.values_list("status", flat=True)) == {"COMPLETED"}
    delivery_ids = [request.headers["webhook-id"] for request in receiver.requests]
    assert len(delivery_ids) == 4 and len(set(delivery_ids)) == 3 and delivery_ids[0] in delivery_ids[1:]


@pytest.mark.django_db(transaction=True)
def test_a_claim_that_waited_for_an_execution_moving_on_claims_the_step_it_moved_to(api, project):
    """A claim that waits for the row lock of an execution whose step another worker is recording reads the step
    the execution moved to, not the step it left (PostgreSQL re-reads a changed row under its lock, not the rows
    joined to it: the execution once seemed to be on a deleted step and ended FAILED)."""
    if connection.vendor != "postgresql":
        pytest.skip("a claim waiting for a row lock needs PostgreSQL")
    workflow = api.workflow()
    first = api.step(workflow, "UPDATE_CONTACT", {"updates": {"one": True}}, name="One")
    second = api.step(workflow, "UPDATE_CONTACT", {"updates": {"two": True}}, name="Two")
    contact = Contact.objects.create(project=project.project, email="ann@example.com")
    execution = WorkflowExecution.objects.create(
        project=project.project, workflow_id=workflow["id"], contact=contact, current_step_id=first["id"]
    )
    claims = behind_a_lock(
        lambda: WorkflowExecution.objects.filter(id=execution.id).update(current_step_id=second["id"]),
        lambda: executions_claim(execution_ids=[execution.id], token=uuid.uuid4()),
    )
    assert [claim.step.name for claim in claims] == ["Two"]
    moved = WorkflowExecution.objects.get(id=execution.id)
    assert (moved.status, moved.exit_reason) == ("RUNNING", "")


def test_a_cancelled_waiting_execution_is_never_resumed(api, waiting_flow, contact, start, committed, track):
    execution = start(waiting_flow, contact)
    api.call("delete", f"/workflows/{waiting_flow['id']}/executions/{execution['id']}", status=200)
    track("ann@example.com", "purchase")
    time_passes(3601)
    assert sweep(committed) == 0
    assert detail(api, waiting_flow, execution)["status"] == "CANCELLED"
    assert steps_of(api, waiting_flow, execution)["Wait"]["status"] == "SKIPPED"
