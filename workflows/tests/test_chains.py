"""Workflows that would start each other forever: the chain of causes (a workflow runs at most
`WORKFLOW_MAX_CHAIN_DEPTH` times in one chain) and the daily cap of executions per contact and workflow
(`WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT`). A refused start is a `workflow.refused` activity item and a log line.

The tests run what each step queues after its commit round after round, as workers take the next task: a loop
shows as rounds that never end. Mail goes to a real SMTP server on loopback."""

import logging
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F

from conftest import client_with
from contacts.models import Contact, Event
from contacts.services import contact_subscription_set
from workflows.models import RefusedStart, WorkflowExecution
from workflows.starts import events_concern_workflows
from workflows.tests.conftest import Api

pytestmark = pytest.mark.django_db
ROUNDS = 60


@pytest.fixture
def settle(django_capture_on_commit_callbacks):
    """Run `call()`, then what it queued for after its commit, a round at a time: each round runs what the one
    before queued (the next tasks, the next events' hook). Fails when work is still queued after `ROUNDS` rounds."""

    def run(call) -> None:
        with django_capture_on_commit_callbacks() as queued:
            call()
        for _ in range(ROUNDS):
            if not queued:
                return
            pending, queued = list(queued), []
            for callback in pending:
                with django_capture_on_commit_callbacks() as more:
                    callback()
                queued.extend(more)
        pytest.fail(f"still going after {ROUNDS} rounds: {WorkflowExecution.objects.count()} executions")

    return run


def reentrant(api: Api, name: str, event: str, step_type: str, config: dict) -> dict:
    workflow = api.workflow(name=name, event=event)
    api.step(workflow, step_type, config)
    api.call("patch", f"/workflows/{workflow['id']}", {"allowReentry": True, "enabled": True}, status=200)
    return workflow


def executions_of(workflow: dict) -> int:
    return WorkflowExecution.objects.filter(workflow_id=workflow["id"]).count()


def refused_items(client, **params) -> list[dict]:
    query = "&".join(f"{key}={value}" for key, value in {"types": "workflow.refused", **params}.items())
    response = client.get(f"/activity?{query}")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_two_workflows_flipping_a_subscription_stop_at_the_chain_depth(api, contact, settle, secret_client, caplog):
    unsubscribe = reentrant(api, "Unsubscribe", "contact.subscribed", "UPDATE_CONTACT", {"subscriptionAction": "unsubscribe"})  # fmt: skip
    subscribe = reentrant(api, "Subscribe", "contact.unsubscribed", "UPDATE_CONTACT", {"subscriptionAction": "subscribe"})  # fmt: skip
    contact.subscribed = False
    contact.save(update_fields=["subscribed"])

    with caplog.at_level(logging.INFO, logger="workflows.limits"):
        settle(lambda: contact_subscription_set(contact=contact, subscribed=True, source="api"))

    # Each workflow ran WORKFLOW_MAX_CHAIN_DEPTH (3) times in the chain the API's change began; the next start of
    # "Unsubscribe" was refused, and the contact stays as the last run left it.
    assert (executions_of(unsubscribe), executions_of(subscribe)) == (3, 3)
    assert set(WorkflowExecution.objects.values_list("status", flat=True)) == {"COMPLETED"}
    contact.refresh_from_db()
    assert contact.subscribed is True
    last = Event.objects.filter(name="contact.subscribed").latest("created_at")
    chain = [unsubscribe["id"], subscribe["id"]] * 3
    assert last.chain == chain

    [refusal] = RefusedStart.objects.all()
    assert (str(refusal.workflow_id), refusal.contact_id, refusal.reason) == (
        unsubscribe["id"],
        contact.id,
        "CHAIN_DEPTH",
    )
    assert (refusal.trigger_event_id, refusal.chain) == (last.id, chain)
    [item] = refused_items(secret_client)
    assert item["id"] == str(refusal.id) and item["contactId"] == str(contact.id)
    assert item["contactEmail"] == "ann@example.com" and item["emailId"] is None
    assert item["metadata"] == {
        "workflowId": unsubscribe["id"],
        "workflowName": "Unsubscribe",
        "reason": "CHAIN_DEPTH",
        "eventId": str(last.id),
        "eventName": "contact.subscribed",
        "chain": chain,
    }
    [line] = [record for record in caplog.records if record.name == "workflows.limits"]
    assert line.levelno == logging.WARNING
    assert unsubscribe["id"] in line.getMessage() and "WORKFLOW_MAX_CHAIN_DEPTH" in line.getMessage()


def test_a_workflow_mailing_on_email_sent_stops_at_the_chain_depth(api, project, contact, template, settle, smtp_sink):
    mailer = reentrant(api, "Mail on send", "email.sent", "SEND_EMAIL", {"templateId": str(template.id)})

    settle(lambda: api.start(mailer, contact))

    # The manual start and two starts by the email.sent of the mail before: three runs in one chain, three mails
    # received; the email.sent of the third refused the fourth start.
    assert executions_of(mailer) == 3
    assert [message.rcpt_tos for message in smtp_sink.received] == [["ann@example.com"]] * 3
    assert Event.objects.filter(name="email.sent").count() == 3
    [refusal] = RefusedStart.objects.all()
    assert (str(refusal.workflow_id), refusal.reason, refusal.chain) == (
        mailer["id"],
        "CHAIN_DEPTH",
        [mailer["id"]] * 3,
    )
    chains = sorted(WorkflowExecution.objects.values_list("chain", flat=True), key=len)
    assert chains == [[], [mailer["id"]], [mailer["id"]] * 2]


def test_the_depth_counts_runs_within_one_chain_and_a_change_by_the_api_begins_a_new_one(
    api, contact, settle, settings
):
    settings.WORKFLOW_MAX_CHAIN_DEPTH = 1
    unsubscribe = reentrant(api, "Unsubscribe", "contact.subscribed", "UPDATE_CONTACT", {"subscriptionAction": "unsubscribe"})  # fmt: skip
    subscribe = reentrant(api, "Subscribe", "contact.unsubscribed", "UPDATE_CONTACT", {"subscriptionAction": "subscribe"})  # fmt: skip
    for _ in range(2):
        contact.refresh_from_db()
        contact.subscribed = False
        contact.save(update_fields=["subscribed"])
        settle(lambda: contact_subscription_set(contact=contact, subscribed=True, source="api"))
    # Per chain: "Unsubscribe" once, "Subscribe" once, the second "Unsubscribe" refused.
    assert (executions_of(unsubscribe), executions_of(subscribe)) == (2, 2)
    assert RefusedStart.objects.filter(workflow_id=unsubscribe["id"], reason="CHAIN_DEPTH").count() == 2


@pytest.fixture
def capped(settings, api, other_project):
    """A daily cap of 3, and a re-entrant workflow on `signup` in each project (EXIT: each execution ends at once)."""
    settings.WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT = 3
    ours = reentrant(api, "Welcome", "signup", "EXIT", {})
    theirs = reentrant(Api(client_with(other_project.keys.secret_key)), "Welcome", "signup", "EXIT", {})
    return ours, theirs


def track_for(persona, committed):
    """POST /v1/track of `signup` for an address in the persona's project, and what it queued after its commit."""
    client = client_with(persona.keys.public_key)

    def post(email: str) -> None:
        response = committed(lambda: client.post("/v1/track", {"email": email, "event": "signup"}, format="json"))
        assert response.status_code == 200, response.content

    return post


def test_the_daily_cap_refuses_the_next_start_of_one_workflow_for_one_contact_only(
    capped, project, other_project, committed, secret_client, caplog
):
    ours, theirs = capped
    track, track_theirs = track_for(project, committed), track_for(other_project, committed)
    for _ in range(3):
        track("ann@example.com")
    with caplog.at_level(logging.INFO, logger="workflows.limits"):
        track("ann@example.com")  # the fourth: refused, and /v1/track still answers 200
    assert executions_of(ours) == 3

    # Another contact of the project, and the same address in another project, are not affected.
    track("bob@example.com")
    track_theirs("ann@example.com")
    assert WorkflowExecution.objects.filter(workflow_id=ours["id"], contact__email="bob@example.com").count() == 1
    assert executions_of(theirs) == 1

    ann = Contact.objects.get(project=project.project, email="ann@example.com")
    [refusal] = RefusedStart.objects.all()
    assert (str(refusal.workflow_id), refusal.contact_id, refusal.reason, refusal.chain) == (
        ours["id"],
        ann.id,
        "DAILY_CAP",
        [],
    )
    [item] = refused_items(secret_client)
    assert item["metadata"]["reason"] == "DAILY_CAP" and item["metadata"]["eventName"] == "signup"
    assert item["metadata"]["workflowId"] == ours["id"] and item["contactId"] == str(ann.id)
    assert refused_items(secret_client, contactId=Contact.objects.get(email="bob@example.com").id) == []
    assert "workflow.refused" in secret_client.get("/activity/types").json()["types"]
    assert refused_items(client_with(other_project.keys.secret_key)) == []
    [line] = [record for record in caplog.records if record.name == "workflows.limits"]
    assert line.levelno == logging.WARNING
    assert ours["id"] in line.getMessage() and "WORKFLOW_DAILY_EXECUTIONS_PER_CONTACT" in line.getMessage()


def test_the_cap_counts_the_last_24_hours(capped, project, committed):
    ours, _ = capped
    track = track_for(project, committed)
    for _ in range(3):
        track("ann@example.com")
    WorkflowExecution.objects.update(started_at=WorkflowExecution.objects.get(entry=1).started_at - timedelta(hours=25))
    track("ann@example.com")
    assert executions_of(ours) == 4 and not RefusedStart.objects.exists()


def test_a_start_by_an_event_nothing_caused_reads_no_chain(
    api, project, contact, redis_cache, django_assert_num_queries
):
    """The chain costs nothing on the common path: an event without a chain, for a workflow without re-entry, is
    started with the statements it always took (the insert and the read of what it inserted, in a savepoint). With
    Redis as the cache, as in production, knowing the triggers are current is a cache read, not a statement."""
    workflow = api.workflow(name="Welcome", event="signup")
    api.step(workflow, "EXIT", {})
    api.enable(workflow)
    event = Event.objects.create(project=project.project, contact=contact, name="signup")
    events_concern_workflows(project=project.project, events=[event])  # the triggers' copy loaded
    WorkflowExecution.objects.all().delete()
    with django_assert_num_queries(4):
        events_concern_workflows(project=project.project, events=[event])
    assert executions_of(workflow) == 1


def test_the_cap_is_one_query_read_from_its_index(
    api, project, contact, settings, redis_cache, django_assert_num_queries
):
    """With re-entry, the start reads the last entries (as it always did) and counts the last 24 hours' executions
    in one query, which an index answers."""
    workflow = reentrant(api, "Welcome", "signup", "EXIT", {})
    event = Event.objects.create(project=project.project, contact=contact, name="signup")
    events_concern_workflows(project=project.project, events=[event])  # the triggers' copy loaded
    WorkflowExecution.objects.all().delete()
    with django_assert_num_queries(6) as captured:
        events_concern_workflows(project=project.project, events=[event])
    assert executions_of(workflow) == 1
    [counted] = [query["sql"] for query in captured.captured_queries if "COUNT(" in query["sql"]]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {counted}")
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {counted}")
        plan = "\n".join(str(row) for row in cursor.fetchall())
    # Either index that leads with the contact answers it: (workflow, contact, started_at) or the timeline's
    # (contact, started_at, id), whichever the planner prefers for the table's size.
    assert "execution_contact_started" in plan or "execution_contact_timeline" in plan, plan


def test_events_recorded_for_many_contacts_carry_their_chain_field_loaded(project, contact, committed):
    """Events written in SQL for a query's contacts reach the receivers with every field, so reading their chain
    costs no query per event."""
    from contacts.services import events_record_for_contacts
    from contacts.signals import events_recorded

    received = []

    def receive(sender, events, **kwargs):
        received.extend(events)

    events_recorded.connect(receive, dispatch_uid="test_chains")
    try:
        ids = Contact.objects.filter(project=project.project).values("id").annotate(contact_id=F("id"))
        committed(lambda: events_record_for_contacts(project=project.project, contact_ids=ids.values("contact_id"), name="segment.vip.entry", data={}))  # fmt: skip
    finally:
        events_recorded.disconnect(dispatch_uid="test_chains")
    [event] = received
    assert event.get_deferred_fields() == set() and event.chain is None
