"""What keeps workflows from starting each other forever (docs/workflows.md, "Chains of causes").

An execution remembers the chain of causes of the event that started it (`WorkflowExecution.chain`: the workflow
ids of the executions whose effects led to that event, oldest first), and what its steps make happen carries that
chain on with its own workflow added (`chain_onward`): the subscription events of an UPDATE_CONTACT step hold it
(`Event.chain`), and the `email.*` events of the mail a SEND_EMAIL step sent reach it through the email's id, which
is the step execution's. An event starts a workflow, unless:

- its chain already ran that workflow `WORKFLOW_MAX_CHAIN_DEPTH` times (two workflows flipping a subscription, a
  workflow that mails on `email.sent`): CHAIN_DEPTH;
- the contact has had `WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT` executions of the workflow in the last 24 hours, the
  bound of the loops no chain follows (a webhook whose receiver tracks an event back, a segment entry that a step's
  data change causes): DAILY_CAP.

A refused start is a `RefusedStart` row (a `workflow.refused` item of the activity feed) and a warning in the log;
it is no error: the events stay recorded, and the request or task that recorded them goes on.
"""

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count

from accounts.models import Project
from contacts.models import Event
from workflows.models import RefusedReason, RefusedStart, WorkflowExecution, WorkflowStepExecution, chain_onward
from workflows.triggers import Trigger

logger = logging.getLogger(__name__)
CAP_WINDOW = timedelta(hours=24)


def events_chains(*, project: Project, events: list[Event]) -> dict:
    """Event id -> chain of causes, for the events that have one: their own (recorded by a step), or, for an
    `email.*` event of an email a workflow sent, what the sending execution carries on. An event nothing automated
    caused has none, and finding that out costs no query."""
    chains = {event.id: event.chain for event in events if event.chain}
    sent = defaultdict(list)
    for event in events:
        # `workflowId` is in the data of every email.* event (`messaging.vocabulary.email_event_data`), and a
        # tracked event cannot take an email.* name.
        data = event.data if isinstance(event.data, dict) else {}
        if event.email_id is not None and event.name.startswith("email.") and data.get("workflowId"):
            sent[event.email_id].append(event.id)
    if sent:
        senders = WorkflowStepExecution.objects.filter(id__in=sent, execution__project_id=project.id).values_list(
            "id", "execution__workflow_id", "execution__chain"
        )
        for email_id, workflow_id, chain in senders:
            for event_id in sent[email_id]:
                chains[event_id] = chain_onward(chain, workflow_id)
    return chains


def starts_sift(
    *, project: Project, trigger: Trigger, events: list[Event], chains: dict, now: datetime
) -> tuple[list[Event], list[RefusedStart]]:
    """The events that may start the trigger's workflow, and the refusals of the others (module docstring). The
    chain costs nothing for events without one; the cap is one query on `execution_contact_started`, and none for a
    workflow without re-entry (a contact enters it once ever)."""
    workflow_id = str(trigger.workflow_id)
    depth, cap = settings.WORKFLOW_MAX_CHAIN_DEPTH, settings.WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT
    refused: dict = {}
    if depth > 0:
        for event in events:
            if event.id in chains and chains[event.id].count(workflow_id) >= depth:
                refused[event.id] = RefusedReason.CHAIN_DEPTH
    contact_ids = {event.contact_id for event in events if event.id not in refused}
    if cap > 0 and trigger.allow_reentry and contact_ids:
        started = dict(
            WorkflowExecution.objects.filter(
                workflow_id=trigger.workflow_id, contact_id__in=contact_ids, started_at__gt=now - CAP_WINDOW
            )
            .values("contact_id")
            .annotate(started=Count("id"))
            .values_list("contact_id", "started")
        )
        for event in events:
            if event.id not in refused and started.get(event.contact_id, 0) >= cap:
                refused[event.id] = RefusedReason.DAILY_CAP
    if not refused:
        return events, []
    refusals = [
        RefusedStart(
            project_id=project.id,
            workflow_id=trigger.workflow_id,
            contact_id=event.contact_id,
            reason=refused[event.id],
            trigger_event_id=event.id,
            event_name=event.name,
            chain=chains.get(event.id, []),
            created_at=now,
        )
        for event in events
        if event.id in refused
    ]
    return [event for event in events if event.id not in refused], refusals


def refusals_log(refusals: list[RefusedStart]) -> None:
    for refusal in refusals:
        if refusal.reason == RefusedReason.CHAIN_DEPTH:
            why = "its chain of causes already ran it %d times (WORKFLOW_MAX_CHAIN_DEPTH)"
            limit = settings.WORKFLOW_MAX_CHAIN_DEPTH
        else:
            why = "the contact had %d executions of it in 24 hours (WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT)"
            limit = settings.WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT
        logger.warning(
            "Workflow %s not started for contact %s by event %s (%s): " + why,
            refusal.workflow_id,
            refusal.contact_id,
            refusal.event_name,
            refusal.trigger_event_id,
            limit,
        )
