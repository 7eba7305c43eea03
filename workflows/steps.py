"""What each step type does when the engine runs it (`workflows.engine`), as an `Outcome`. A step may run again
after a worker died mid-step, so each one's side effect is keyed or idempotent: SEND_EMAIL stores its email under
the step execution's id, a WEBHOOK sends the same `webhook-id` on every attempt, UPDATE_CONTACT sets values."""

import json
import logging
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import InterfaceError, OperationalError
from django.utils import timezone

from accounts.tenancy.services import project_webhook_secret
from contacts.models import Contact
from contacts.services import contact_subscription_set, contact_update
from core.errors import ServiceError
from core.tasks import time_limit_reached
from core.time import iso
from messaging.content import rendering
from messaging.models import Email, created_q
from messaging.sending.services import WORKFLOW, WORKFLOW_ADDRESS, Address, Recipient, SendContent, emails_queue
from segments.conditions import condition_matches
from workflows.configs import CONTEXT_PREFIX, DELAY_UNITS, webhook_url_problem
from workflows.models import StepExecutionStatus, StepType, WaitOutcome
from workflows.runs import Claim, Outcome
from workflows.webhooks import WebhookResult, webhook_retry_delay, webhook_send

logger = logging.getLogger(__name__)
EXIT_REASON = "Exited by an EXIT step"


def steps_run(claims: list[Claim], *, keep_alive: Callable[[], None] = lambda: None) -> list[Outcome]:
    """The outcome of each claim's step, in order: the SEND_EMAIL steps of one step to contacts as one bulk send,
    every other one by itself, `keep_alive` (the engine's lease renewal) called before each."""
    outcomes: dict[int, Outcome] = {}
    sends: dict = defaultdict(list)
    for index, claim in enumerate(claims):
        recipient = claim.step.config.get("recipient") or {}
        if claim.step.type == StepType.SEND_EMAIL and recipient.get("type") != "CUSTOM":
            sends[claim.step.id].append(index)
        else:
            keep_alive()
            [outcomes[index]] = _guarded([claim], _run_one)
    for indexes in sends.values():
        keep_alive()
        outcomes.update(zip(indexes, _guarded([claims[index] for index in indexes], _send_to_contacts), strict=True))
    return [outcomes[index] for index in range(len(claims))]


def _run_one(claims: list[Claim]) -> list[Outcome]:
    [claim] = claims
    return [_HANDLERS[claim.step.type](claim)]


def _guarded(claims: list[Claim], run: Callable[[list[Claim]], list[Outcome]]) -> list[Outcome]:
    """Run the steps; their own failure becomes a FAILED outcome for each. A lost database, or the task's soft time
    limit, is not the steps' failure: it is raised, and the engine hands the steps back."""
    try:
        return run(claims)
    except (OperationalError, InterfaceError):
        raise
    except ServiceError as refused:
        return [Outcome(error=_service_error_text(refused))] * len(claims)
    except Exception as exc:
        if time_limit_reached(exc):
            raise
        logger.exception("Workflow step %s of %d execution(s) failed", claims[0].step.id, len(claims))
        return [Outcome(error=f"{type(exc).__name__}: {exc}")] * len(claims)


def _service_error_text(refused: ServiceError) -> str:
    errors = getattr(refused, "errors", None) or []
    if errors:
        first = errors[0]
        return (
            f"{refused.message} ({first.get('field')}: {first.get('message')})"
            if first.get("field")
            else refused.message
        )
    return refused.message


def _contact(claim: Claim) -> Contact:
    # Read with the execution's row lock, after the last step (`workflows.engine._locked`).
    return claim.execution.contact


def _variables(contact: Contact, context: dict) -> dict:
    """The Liquid variables of a step: the contact's data, and the execution's context as `context` and `event`."""
    return {**contact.data, "context": context, "event": context}


# TRIGGER, EXIT -----------------------------------------------------------------------------------------------------


def _trigger(claim: Claim) -> Outcome:
    return Outcome()


def _exit(claim: Claim) -> Outcome:
    return Outcome(exit_reason=claim.step.config.get("reason") or EXIT_REASON)


# SEND_EMAIL -------------------------------------------------------------------------------------------------------


def _content(claim: Claim) -> SendContent:
    template = claim.step.template
    return SendContent(
        subject=template.subject,
        body=template.body,
        sender=Address(email=template.from_email, name=template.from_name or claim.execution.project.name),
        reply_to=template.reply_to,
        type=template.type,
        template=template,
        source=Email.Source.WORKFLOW,
        workflow_id=claim.execution.workflow_id,
    )


def _sent(email_id, to_email: str, status: str) -> Outcome:
    return Outcome(output={"emailId": str(email_id), "to": to_email, "status": status})


def _send_to_contacts(claims: list[Claim]) -> list[Outcome]:
    """SEND_EMAIL of one step to each execution's contact, through the send path (one insert), each email keyed
    by its step execution's id: run twice (a worker died after queueing), a step finds its email and queues
    nothing more. To an unsubscribed contact a MARKETING or HEADLESS template is stored SUPPRESSED and the
    execution goes on."""
    # A first run has a new step execution, so no email can have its id yet; only a run again looks.
    again = [claim.step_execution.id for claim in claims if claim.resume is not None]
    existing = {
        row["id"]: row
        for row in Email.objects.filter(created_q(again), id__in=again).values("id", "to_email", "status")
    }
    to_send = [claim for claim in claims if claim.step_execution.id not in existing]
    if to_send:
        queued = emails_queue(
            project=to_send[0].execution.project,
            content=_content(to_send[0]),
            recipients=[
                Recipient(
                    email=_contact(claim).email,
                    contact=_contact(claim),
                    variables=_variables(_contact(claim), claim.execution.context),
                    email_id=claim.step_execution.id,
                )
                for claim in to_send
            ],
            policy=WORKFLOW,
        )
        existing.update(
            {item.email.id: {"to_email": item.email.to_email, "status": item.email.status} for item in queued}
        )
    return [
        _sent(key, existing[key]["to_email"], existing[key]["status"]) for key in (c.step_execution.id for c in claims)
    ]


def _send_email(claim: Claim) -> Outcome:
    """SEND_EMAIL to a CUSTOM recipient, through the one send path, keyed by the step execution's id as
    `_send_to_contacts` keys its emails. The address gets the contact's variables: its data, and its `id`, `email`
    and `subscribed` (the email is about the contact, not to it)."""
    email_id = claim.step_execution.id
    existing = (
        None
        if claim.resume is None
        else Email.objects.filter(created_q([email_id]), id=email_id).values("to_email", "status").first()
    )
    if existing is None:
        context = claim.execution.context
        # Values for this email only (the data rules' non-persistent form): rendered, never stored on a contact.
        transient = {**_contact(claim).data, "context": context, "event": context}
        [queued] = emails_queue(
            project=claim.execution.project,
            recipients=[Address(email=claim.step.config["recipient"]["email"])],
            content=_content(claim),
            data={key: {"value": value, "persistent": False} for key, value in transient.items()},
            email_id=email_id,
            policy=WORKFLOW_ADDRESS,
            about=_contact(claim),
        )
        existing = {"to_email": queued.email.to_email, "status": queued.email.status}
    return _sent(email_id, existing["to_email"], existing["status"])


# DELAY, WAIT_FOR_EVENT --------------------------------------------------------------------------------------------


def _delay(claim: Claim) -> Outcome:
    # Not paused yet (a first run, or one whose worker died before it recorded the pause): pause now.
    if claim.step_execution.scheduled_for is None:
        config = claim.step.config
        until = claim.now + timedelta(seconds=config["amount"] * DELAY_UNITS[config["unit"]])
        return Outcome(pause=StepExecutionStatus.SCHEDULED, until=until)
    return Outcome(output={"delayedUntil": iso(claim.step_execution.scheduled_for), "resumedAt": iso(claim.now)})


def _wait_for_event(claim: Claim) -> Outcome:
    """Wait for the event (`workflows.starts.executions_resume_for_events` hands it over as the step's output) or
    the timeout, then take the transition of that outcome."""
    if claim.resume == "event":
        output = claim.step_execution.output
        data = output.get("eventData")
        return Outcome(output=output, follow=WaitOutcome.EVENT, context=data if isinstance(data, dict) else None)
    due = claim.step_execution.scheduled_for
    if claim.resume == "due" and due is not None and due <= claim.now:
        return Outcome(output={"waitOutcome": WaitOutcome.TIMEOUT}, follow=WaitOutcome.TIMEOUT)
    timeout = claim.step.config.get("timeout")
    until = claim.now + timedelta(seconds=timeout) if timeout else None
    return Outcome(pause=StepExecutionStatus.WAITING, until=until)


# CONDITION --------------------------------------------------------------------------------------------------------


def _condition(claim: Claim) -> Outcome:
    """One filter of the segment condition language, by the segments app's evaluator; a `context.<path>` field is
    the same filter on `data.<path>` of a contact whose data is the execution's context."""
    filter_ = {
        key: claim.step.config[key] for key in ("field", "operator", "value", "unit") if key in claim.step.config
    }
    contact = _contact(claim)
    field = filter_.get("field", "")
    if field.startswith(CONTEXT_PREFIX):
        filter_["field"] = "data." + field.removeprefix(CONTEXT_PREFIX)
        contact = Contact(
            id=contact.id, project_id=contact.project_id, email=contact.email, subscribed=contact.subscribed,
            data=claim.execution.context, created_at=contact.created_at, updated_at=contact.updated_at,
        )  # fmt: skip
    matched = condition_matches(
        {"logic": "AND", "groups": [{"filters": [filter_]}]}, contact=contact, now=timezone.now()
    )
    branch = "yes" if matched else "no"
    return Outcome(output={"result": matched, "branch": branch}, follow=branch)


# WEBHOOK ----------------------------------------------------------------------------------------------------------


def _render_json(value, scope: dict):
    if isinstance(value, str):
        return rendering.render(value, scope, html=False, lenient=True)
    if isinstance(value, dict):
        return {key: _render_json(item, scope) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_json(item, scope) for item in value]
    return value


def _webhook(claim: Claim) -> Outcome:
    """One attempt of the call. A retryable failure pauses the step until the next attempt (`webhook_retry_delay`:
    about 1, 5 and 25 s), counting attempts in the step's output meanwhile; the final answer is the output and the
    execution goes on, whether the call succeeded or not."""
    config, execution = claim.step.config, claim.execution
    contact = _contact(claim)
    scope = rendering.template_scope(
        contact_id=str(contact.id),
        email=contact.email,
        subscribed=contact.subscribed,
        data=_variables(contact, execution.context),
        links={},
    )
    url = rendering.render(config["url"], scope, html=False, lenient=True).strip()
    method = config.get("method", "POST")
    headers = {
        name: rendering.render(value, scope, html=False, lenient=True)
        for name, value in config.get("headers", {}).items()
    }
    if "body" in config:
        payload = _render_json(config["body"], scope)
    elif method != "GET":
        payload = {
            "contact": {
                "id": str(contact.id),
                "email": contact.email,
                "subscribed": contact.subscribed,
                "data": contact.data,
            },
            "workflow": {"id": str(execution.workflow_id), "name": execution.workflow.name},
            "execution": {"id": str(execution.id), "startedAt": iso(execution.started_at)},
            "context": execution.context,
        }
    else:
        payload = None
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    if payload is not None and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"

    problem = webhook_url_problem(url)
    if problem:
        result = WebhookResult(status_code=None, body="", error=f"refused: {problem}", retryable=False)
    else:
        result = webhook_send(
            url=url,
            method=method,
            headers=headers,
            body=body,
            secret=project_webhook_secret(project=execution.project),
            webhook_id=f"msg_{claim.step_execution.id.hex}",
        )
    progress = claim.step_execution.output if claim.resume in ("due", "rerun") else None
    progress = progress if isinstance(progress, dict) and "attempts" in progress else {}
    attempts = progress.get("attempts", 0) + 1
    first = datetime.fromisoformat(progress["firstAttemptAt"]) if "firstAttemptAt" in progress else claim.now
    delay = webhook_retry_delay(result=result, attempt=attempts, elapsed=(timezone.now() - first).total_seconds())
    if delay is not None:
        return Outcome(
            output={"attempts": attempts, "firstAttemptAt": iso(first), "lastError": result.error},
            pause=StepExecutionStatus.SCHEDULED,
            until=timezone.now() + timedelta(seconds=delay),
        )
    output = {
        "url": url,
        "method": method,
        "statusCode": result.status_code,
        "success": result.success,
        "response": result.body,
        "attempts": attempts,
    }
    if result.error:
        output["error"] = result.error
    return Outcome(output=output)


# UPDATE_CONTACT ---------------------------------------------------------------------------------------------------


def _update_contact(claim: Claim) -> Outcome:
    """Through the contacts app's own writes: the data rules for `updates`, the subscription service for the
    action (which records `contact.subscribed` / `contact.unsubscribed`). Setting values is idempotent."""
    config = claim.step.config
    contact = _contact(claim)
    contact.project = claim.execution.project
    updates = config.get("updates")
    if updates:
        contact_update(contact=contact, data=updates)
    action = config.get("subscriptionAction", "none")
    if action != "none":
        # The event carries the chain of causes on, so that a workflow it starts can tell a loop (`workflows.limits`).
        contact_subscription_set(
            contact=contact,
            subscribed=action == "subscribe",
            source="workflow",
            chain=claim.execution.chain_onward,
        )
    return Outcome(
        output={"updated": sorted(updates or {}), "subscriptionAction": action, "subscribed": contact.subscribed}
    )


_HANDLERS = {
    StepType.TRIGGER: _trigger,
    StepType.SEND_EMAIL: _send_email,
    StepType.DELAY: _delay,
    StepType.WAIT_FOR_EVENT: _wait_for_event,
    StepType.CONDITION: _condition,
    StepType.WEBHOOK: _webhook,
    StepType.UPDATE_CONTACT: _update_contact,
    StepType.EXIT: _exit,
}
