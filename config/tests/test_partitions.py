"""Partitioned history on PostgreSQL (docs/scaling.md "Partitioned history"): events and emails by month, the
conversion of a plain table in place, the months made ahead, retention dropping whole months, the doctor, the reads
that name a time window (or an id, which names one) touching only the partitions of that window, and the reads over
all of history bounded by index probes, by the newest months or by an index alone (read from EXPLAIN)."""

import re
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from campaigns.stats import campaign_stats_recount
from campaigns.tests.test_caps import _started
from config.doctor import OK, PROBLEM, check_partitions
from config.retention import PARTITIONED_TABLES, retention_apply
from config.schedule import BEAT_SCHEDULE
from config.tasks import ensure_partitions_task
from config.tests.test_retention import purge
from contacts.models import Contact, Event
from core.ids import uuid7_of
from core.partitions import (
    AHEAD_MONTHS,
    is_partitioned,
    month_start,
    partition_drop,
    partition_in_place,
    partitions,
    partitions_ensure,
)
from messaging.engagement.hits import Hit
from messaging.engagement.services import engagement_hits_record
from messaging.feedback.events import FeedbackEvent
from messaging.feedback.services import email_for_feedback
from messaging.insights.activity import activity_stats
from messaging.insights.analytics import top_campaigns, top_events
from messaging.insights.timeline import TIMELINE_WINDOW, contact_timeline
from messaging.models import Email, Suppression
from messaging.sending.delivery import _PG_CLAIM, pg_claim_params
from segments.conditions.sql import condition_q

TABLE = Event._meta.db_table
EMAILS = Email._meta.db_table
DAY = timedelta(days=1)

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="partitions exist on PostgreSQL only")


def months_of(table: str) -> list:
    """`table` as an install that has run for a while has it: one partition per month, from 15 months ago to the
    months ahead (the test database's own has only the partition its conversion made, before this month). The
    test's transaction undoes it."""
    now = timezone.now()
    for partition in partitions(table):
        if partition.lower is None:
            partition_drop(partition)
    partitions_ensure(table=table, now=month_start(now, add=-15), ahead=15 + AHEAD_MONTHS)
    return partitions(table)


@pytest.fixture
def monthly(db):
    return months_of(TABLE)


@pytest.fixture
def emails_monthly(db):
    return months_of(EMAILS)


@pytest.fixture
def contact(project):
    return Contact.objects.create(project=project.project, email="p@example.test")


def event(contact, when, name="visited") -> Event:
    return Event.objects.create(project=contact.project, contact=contact, name=name, created_at=when)


def committed() -> None:
    """The rows of the test's transaction as if committed: their deferred foreign-key checks run now, as a commit
    would run them (a table with checks pending cannot be dropped in the transaction that wrote it)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def exists(table: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
        return cursor.fetchone()[0]


@pytest.mark.parametrize("table", PARTITIONED_TABLES)
def test_each_history_table_is_partitioned_by_month_with_the_months_ahead(db, table):
    now = timezone.now()
    found = partitions(table)
    assert is_partitioned(table)
    assert all(any(p.covers(month_start(now, add=n)) for p in found) for n in range(AHEAD_MONTHS + 1))
    assert all(p.lower is None or p.upper == month_start(p.lower, add=1) for p in found)


def test_a_month_past_retention_is_dropped_whole(monthly, contact, settings):
    settings.EVENT_RETENTION_DAYS = 100
    now = timezone.now()
    cutoff = now - 100 * DAY
    boundary, next_month = month_start(cutoff), month_start(cutoff, add=1)
    dropped_month = [event(contact, now - 200 * DAY), event(contact, now - 200 * DAY - DAY)]
    old_in_boundary = event(contact, boundary + (cutoff - boundary) / 2)
    kept = [event(contact, cutoff + (next_month - cutoff) / 2), event(contact, now)]
    dropped_table = f"{TABLE}_{month_start(now - 200 * DAY):%Y%m}"
    past = [p.name for p in monthly if p.upper is not None and p.upper <= cutoff]
    assert dropped_table in past

    committed()
    assert purge("--dry-run")["removed"]["events"] == 3
    with CaptureQueriesContext(connection) as queries:
        assert purge()["removed"]["events"] == 3

    assert not any(exists(name) for name in past)  # every month wholly before the cutoff is gone, as a table
    assert exists(f"{TABLE}_{boundary:%Y%m}")
    assert set(Event.objects.values_list("id", flat=True)) == {e.id for e in kept}
    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE")]
    assert deletes and all(e.id.hex not in sql for sql in deletes for e in dropped_month)  # not row by row
    assert any(old_in_boundary.id.hex in sql for sql in deletes)
    assert purge()["removed"]["events"] == 0


def test_a_projects_purge_deletes_its_rows_and_keeps_the_partitions(monthly, contact, other_project, settings):
    settings.EVENT_RETENTION_DAYS = 100
    old = event(contact, timezone.now() - 200 * DAY)
    theirs = Contact.objects.create(project=other_project.project, email="q@example.test")
    their_old = event(theirs, timezone.now() - 200 * DAY)
    assert retention_apply(project_id=contact.project_id)["events"] == 1
    assert exists(f"{TABLE}_{old.created_at:%Y%m}")
    assert list(Event.objects.values_list("id", flat=True)) == [their_old.id]


def test_the_doctor_sees_next_months_partition_missing_and_the_beat_entry_makes_it(db):
    now = timezone.now()
    assert [f.state for f in check_partitions()] == [OK] * len(PARTITIONED_TABLES)
    # The months ahead as a run of the beat entry leaves them; then next month's is lost.
    for table in PARTITIONED_TABLES:
        partitions_ensure(table=table, now=now)
    [next_month] = [p for p in partitions(EMAILS) if p.lower == month_start(now, add=1)]
    partition_drop(next_month)
    events, emails = check_partitions()
    assert events.state == OK
    assert emails.state == PROBLEM and f"{month_start(now, add=1):%Y-%m}" in emails.detail

    assert ensure_partitions_task.apply().get() == {TABLE: [], EMAILS: [next_month.name]}
    assert [f.state for f in check_partitions()] == [OK, OK]
    assert ensure_partitions_task.apply().get() == {TABLE: [], EMAILS: []}  # idempotent
    entry = BEAT_SCHEDULE["ensure-partitions"]
    assert entry["task"] == ensure_partitions_task.name and entry["options"]["expires"] < 24 * 60 * 60


def read_partitions(sql: str, params=None, *, table: str = TABLE, run: bool = False) -> set[str]:
    """The partitions of `table` a statement reads, from its plan; with `run`, from the plan as run (EXPLAIN
    ANALYZE, its writes undone), where a partition pruned by a value the statement only learns as it runs (a
    join's) shows as never executed."""
    explain = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)" if run else "EXPLAIN"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"{explain} {sql}", params)
        lines = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    names = {p.name for p in partitions(table)}
    read = set()
    for line in lines:
        if "never executed" in line or line.lstrip().startswith(("Update on", "Delete on")):
            continue
        read |= {name for name in re.findall(rf"\bon ({table}_\w+)", line) if name in names}
    return read


def scanned(queries, *, table: str = TABLE, run: bool = False) -> list[set[str]]:
    """The partitions each captured statement on `table` reads (`read_partitions`)."""
    return [read_partitions(q["sql"], table=table, run=run) for q in queries if table in q["sql"]]


def in_window(partitions_, start, end=None) -> set[str]:
    return {
        p.name
        for p in partitions_
        if (p.upper is None or p.upper > start) and (end is None or p.lower is None or p.lower <= end)
    }


def test_analytics_read_only_the_months_of_their_window(monthly, contact):
    now = timezone.now()
    event(contact, now - DAY)  # a name counted, so that the previous window is read too
    with CaptureQueriesContext(connection) as queries:
        top_events(project=contact.project, limit=5, days=30)
    current, previous = scanned(queries)
    assert current == in_window(monthly, now - 30 * DAY)
    assert previous == in_window(monthly, now - 60 * DAY, now - 30 * DAY)
    assert len(current) < len(monthly) / 2
    with CaptureQueriesContext(connection) as queries:
        activity_stats(project=contact.project, days=7)
    assert scanned(queries) == [in_window(monthly, now - 7 * DAY)]


def test_a_contacts_timeline_reads_only_the_months_of_its_window(monthly, contact):
    now = timezone.now()
    event(contact, now - DAY, name="segment.s.entry")
    with CaptureQueriesContext(connection) as queries:
        contact_timeline(contact=contact, now=now)
    plans = scanned(queries)
    assert plans and all(plan and plan <= in_window(monthly, now - TIMELINE_WINDOW, now) for plan in plans)


def test_a_contacts_segment_entries_are_read_from_their_own_index_in_every_month(monthly, contact):
    now = timezone.now()
    for day in range(1, 40):
        event(contact, now - day * DAY)
    event(contact, now - DAY, name="segment.s.entry")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indisvalid, (SELECT count(*) FROM pg_inherits WHERE inhparent = indexrelid) FROM pg_index "
            "WHERE indexrelid = 'event_contact_segment'::regclass"
        )
        valid, attached = cursor.fetchone()
        assert valid and attached == len(monthly)  # months made later take the index too
        cursor.execute(
            "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'event_contact_segment'::regclass"
        )
        segment_indexes = {row[0] for row in cursor.fetchall()}
    with CaptureQueriesContext(connection) as queries:
        contact_timeline(contact=contact, now=now)
    (statement,) = [query["sql"] for query in queries if 'WHERE ("contacts_event"."name"::text LIKE' in query["sql"]]
    with connection.cursor() as cursor:
        # The months' tables hold a few rows, which a scan reads as fast: the plan shows which index the query can use.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    used = set(re.findall(r"Index Scan (?:Backward )?using (\w+)|Bitmap Index Scan on (\w+)", plan))
    assert used and {name for pair in used for name in pair if name} <= segment_indexes, plan


def test_a_segment_condition_on_recent_events_reads_only_those_months(monthly, contact):
    now = timezone.now()
    condition = {
        "logic": "AND",
        "groups": [
            {
                "logic": "AND",
                "filters": [{"field": "event.buy", "operator": "triggeredWithin", "value": 10, "unit": "days"}],
            }
        ],
    }
    with CaptureQueriesContext(connection) as queries:
        list(Contact.objects.filter(project=contact.project).filter(condition_q(condition, now=now)))
    assert scanned(queries) == [in_window(monthly, now - 10 * DAY)]


# Reads over all of history (docs/scaling.md "Partitioned history", the table of reads): bounded by index probes, or
# stopping at the newest months, or counted from an index alone. Read from EXPLAIN's JSON plans.


def plan_nodes(sql: str, *, analyze: bool = False) -> list[dict]:
    """The nodes of the plan of `sql` that read a partition of events (`analyze`: as run, with actual rows)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON{', ANALYZE' if analyze else ''}) {sql}")
        (plan,) = cursor.fetchone()[0]
    nodes, todo = [], [plan["Plan"]]
    while todo:
        node = todo.pop()
        todo += node.get("Plans", [])
        if node.get("Relation Name", "").startswith(f"{TABLE}_"):
            nodes.append(node)
    return nodes


def statements(queries, needle: str = "") -> list[str]:
    return [q["sql"] for q in queries if TABLE in q["sql"] and needle in q["sql"]]


@pytest.fixture
def history(monthly, contact):
    """Five events of each of three names in each of the last six months."""
    now = timezone.now()
    return [
        event(contact, month_start(now, add=-months) + (months + 1) * timedelta(minutes=1), name=name)
        for months in range(6)
        for name in ("visited", "bought", "email.sent")
        for _ in range(5)
    ]


def test_event_names_and_activity_types_take_one_probe_per_name_and_month(history, contact, secret_client):
    with CaptureQueriesContext(connection) as queries:
        assert secret_client.get("/events/names").json() == {"eventNames": ["bought", "email.sent", "visited"]}
        assert secret_client.get("/activity/types").json()["types"] == ["email.sent", "event.triggered"]
    names, types = statements(queries)
    assert names == types
    nodes = plan_nodes(names, analyze=True)
    assert {node["Node Type"] for node in nodes} == {"Index Only Scan"}
    assert {node["Index Name"] for node in nodes} <= {
        f"{p.name}_project_id_name_created_at_contact_id_idx" for p in partitions(TABLE)
    }
    # Each probe stops at the first entry after the last name: at most one row per partition and step (four steps:
    # three names and the end), where a DISTINCT would read all 90 events.
    assert all(node["Actual Rows"] <= 1 and node["Actual Loops"] <= 4 for node in nodes)


# The activity feed without startDate reads its last 30 days (the test below); with an early one, all of history.
ALL_ACTIVITY = "/activity?startDate=2000-01-01"


@pytest.mark.parametrize(
    "path", ["/events?limit=4", "/events?limit=4&name=visited", f"{ALL_ACTIVITY}&limit=4", "contact"]
)
def test_newest_first_pages_stop_at_the_newest_months(history, contact, secret_client, path):
    path = f"/events/contact/{contact.id}?limit=4" if path == "contact" else path
    with CaptureQueriesContext(connection) as queries:
        assert secret_client.get(path).json()["hasMore"] is True
    [page] = statements(queries, "LIMIT")
    read = {node["Relation Name"] for node in plan_nodes(page, analyze=True) if node["Actual Loops"]}
    # The five rows of the page (4 and the one that says more follow) are all in the newest month.
    assert read and read <= in_window(partitions(TABLE), month_start(timezone.now()))


@pytest.mark.parametrize("path", ["/events", "/events?name=visited", ALL_ACTIVITY, "/events/visited/usage"])
def test_counts_over_all_history_are_read_from_an_index_alone(history, secret_client, path):
    with CaptureQueriesContext(connection) as queries:
        assert secret_client.get(path).status_code == 200
    [count] = statements(queries, "COUNT(")
    # With scans of the table ruled out, an index that does not hold every column the count needs would show as an
    # Index Scan (reading each row): every partition is counted from its index entries.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
    nodes = plan_nodes(count)
    assert {node["Node Type"] for node in nodes} == {"Index Only Scan"}
    assert {node["Relation Name"] for node in nodes} == {p.name for p in partitions(TABLE)}


# Emails ----------------------------------------------------------------------------------------------------------


def email_row(project, when=None, **fields) -> Email:
    """An email as the send path writes it: its id made of its `created_at`."""
    when = when or timezone.now()
    return Email.objects.create(
        id=uuid7_of(when),
        project=project,
        to_email="p@example.test",
        from_email="a@alice.test",
        subject="S",
        html="<p>hi</p>",
        created_at=when,
        **fields,
    )


def month_of(partitions_, moment) -> str:
    [name] = [p.name for p in partitions_ if p.covers(moment)]
    return name


@pytest.mark.django_db(transaction=True)
def test_a_plain_table_of_emails_becomes_partitioned_in_place_with_its_rows(project):
    """The conversion of `messaging.0013`, on a plain copy of the emails table with rows of two months: the table
    becomes the partition of everything before next month as it stands (the same file: no row copied), keeps its
    indexes and foreign keys, and new months take new rows."""
    table, now = "conversion_email", timezone.now()
    old, recent = email_row(project.project, now - 40 * DAY, status="SENT"), email_row(project.project, now)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {table} (LIKE {EMAILS} INCLUDING DEFAULTS)")
        cursor.execute(f"INSERT INTO {table} SELECT * FROM {EMAILS}")
        cursor.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
        cursor.execute(
            f"CREATE INDEX {table}_campaign ON {table} (campaign_id, contact_id) WHERE campaign_id IS NOT NULL"
        )
        cursor.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_project FOREIGN KEY (project_id) REFERENCES accounts_project (id)"
        )
        cursor.execute("SELECT relfilenode FROM pg_class WHERE oid = %s::regclass", [table])
        (file,) = cursor.fetchone()
    try:
        partition_in_place(table=table, column="created_at", now=now, log=lambda line: None)
        found = partitions(table)
        legacy = found[0]
        # Next month's start, or the one after on the last day of a month (the conversion's margin).
        bound = month_start(now + DAY, add=1)
        assert is_partitioned(table) and legacy.lower is None and legacy.upper == bound
        assert [p.lower for p in found[1:]] == [
            month_start(bound, add=n)
            for n in range(AHEAD_MONTHS + 1)
            if month_start(bound, add=n) <= month_start(now, add=AHEAD_MONTHS)
        ]
        with connection.cursor() as cursor:
            cursor.execute("SELECT relfilenode FROM pg_class WHERE oid = %s::regclass", [legacy.name])
            assert cursor.fetchone() == (file,)  # the same table, not a copy
            cursor.execute(f"SELECT id FROM {table} ORDER BY created_at")
            assert [row[0] for row in cursor.fetchall()] == [old.id, recent.id]
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s", [table])
            indexes = {row[0].split(" USING ")[1] for row in cursor.fetchall()}
            assert "btree (id, created_at)" in indexes
            assert "btree (campaign_id, contact_id) WHERE (campaign_id IS NOT NULL)" in indexes
            cursor.execute(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'", [table]
            )
            assert cursor.fetchone() == (1,)
            next_month = bound + DAY
            cursor.execute(
                f"UPDATE {table} SET created_at = %s WHERE id = %s RETURNING tableoid::regclass::text",
                [next_month, recent.id],
            )
            assert cursor.fetchone() == (f"{table}_{next_month:%Y%m}",)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")


def test_a_month_of_emails_past_retention_is_dropped_whole(emails_monthly, project, settings, admin_client):
    """Whole months before the cutoff go as tables, but one holding an email still to be sent, which is deleted row
    by row (its queued email kept); the cutoff's month is deleted row by row. A suppression whose email went with
    its month keeps the id of a row that is gone, and reads as one without its email."""
    settings.EMAIL_RETENTION_DAYS = 100
    now = timezone.now()
    cutoff = now - 100 * DAY
    boundary = month_start(cutoff)
    dropped = [email_row(project.project, now - 200 * DAY, status="SENT") for _ in range(2)]
    queued_old = email_row(project.project, now - 300 * DAY, status="QUEUED")
    sent_beside = email_row(project.project, now - 300 * DAY + DAY, status="SENT")
    old_in_boundary = email_row(project.project, boundary + (cutoff - boundary) / 2, status="SENT")
    kept = email_row(project.project, now, status="SENT")
    suppression = Suppression.objects.create(
        project=project.project, email="p@example.test", reason="BOUNCE", source_email=dropped[0]
    )
    past = [p.name for p in emails_monthly if p.upper is not None and p.upper <= cutoff]
    held = month_of(emails_monthly, queued_old.created_at)

    committed()
    with CaptureQueriesContext(connection) as queries:
        assert purge()["removed"]["emails"] == 4

    assert not any(exists(name) for name in past if name != held)
    assert exists(held) and exists(month_of(emails_monthly, boundary))
    assert set(Email.objects.values_list("id", flat=True)) == {queued_old.id, kept.id}
    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE") and EMAILS in q["sql"]]
    assert all(e.id.hex not in sql for sql in deletes for e in dropped)  # not row by row
    assert any(sent_beside.id.hex in sql for sql in deletes) and any(old_in_boundary.id.hex in sql for sql in deletes)
    suppression.refresh_from_db()
    assert suppression.source_email_id == dropped[0].id
    assert (
        email_for_feedback(
            event=FeedbackEvent(provider="p", event_id="e", event_type="bounce", kind=None, email_id=str(dropped[0].id))
        )
        is None
    )
    response = admin_client.get(f"/admin/messaging/suppression/{suppression.pk}/change/")
    assert response.status_code == 200


def test_lookups_by_email_id_read_only_the_month_of_the_id(emails_monthly, project):
    """An id names its month (UUIDv7, `messaging.models.created_window`): a tracked open, the delivery claim and a
    provider's notification by email id read one partition (two near a month's edge), not every month's."""
    now = timezone.now()
    email = email_row(project.project, now, status="SENT")
    email_row(project.project, now - 60 * DAY, status="SENT")
    near = in_window(emails_monthly, now - DAY, now + DAY)
    assert 1 <= len(near) <= 2 < len(emails_monthly)

    with CaptureQueriesContext(connection) as queries:
        engagement_hits_record(hits=[Hit(kind="open", email_id=str(email.id), at=now)])
    assert scanned(queries[:1], table=EMAILS, run=True) == [{month_of(emails_monthly, now)}]

    queued = email_row(project.project, now)
    claim = read_partitions(_PG_CLAIM, pg_claim_params([queued.id], now), table=EMAILS, run=True)
    assert claim == {month_of(emails_monthly, now)}

    with CaptureQueriesContext(connection) as queries:
        event = FeedbackEvent(provider="p", event_id="e", event_type="delivered", kind=None, email_id=str(email.id))
        assert email_for_feedback(event=event) == email
    assert scanned(queries, table=EMAILS) == [near]


def test_a_contacts_and_a_campaigns_emails_read_only_their_months(emails_monthly, project, contact):
    now = timezone.now()
    email_row(project.project, now - DAY, contact=contact)
    with CaptureQueriesContext(connection) as queries:
        contact_timeline(contact=contact, now=now)
    plans = scanned(queries, table=EMAILS)
    assert plans and all(plan and plan <= in_window(emails_monthly, now - TIMELINE_WINDOW, now) for plan in plans)

    campaign = _started(project.project, "Spring")
    campaign.sent_at = now - 3 * DAY
    email_row(project.project, now - 2 * DAY, campaign_id=campaign.id, contact=contact)
    with CaptureQueriesContext(connection) as queries:
        campaign_stats_recount(campaign=campaign)
    plans = scanned(queries, table=EMAILS)
    assert plans and all(plan == in_window(emails_monthly, now - 4 * DAY) for plan in plans)

    with CaptureQueriesContext(connection) as queries:
        top_campaigns(project=project.project, limit=5, days=30)
    assert scanned(queries, table=EMAILS) == [in_window(emails_monthly, now - 30 * DAY)]


def test_the_activity_feed_without_a_start_reads_the_months_of_its_30_days(history, secret_client):
    now = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        assert secret_client.get("/activity").status_code == 200
    plans = scanned(queries)
    assert plans and all(plan and plan <= in_window(partitions(TABLE), now - 31 * DAY) for plan in plans)
    assert len(partitions(TABLE)) > len(in_window(partitions(TABLE), now - 31 * DAY))
