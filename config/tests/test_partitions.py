"""Partitioned history on PostgreSQL (docs/scaling.md "Partitioned history"): events by month, the months made
ahead, retention dropping whole months, the doctor, the reads that name a time window touching only the partitions
of that window, and the reads over all of history bounded by index probes, by the newest months or by an index alone
(read from EXPLAIN)."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.doctor import OK, PROBLEM, check_partitions
from config.retention import PARTITIONED_TABLES, retention_apply
from config.schedule import BEAT_SCHEDULE
from config.tasks import ensure_partitions_task
from config.tests.test_retention import purge
from contacts.models import Contact, Event
from core.partitions import AHEAD_MONTHS, is_partitioned, month_start, partition_drop, partitions, partitions_ensure
from messaging.insights.activity import activity_stats
from messaging.insights.analytics import top_events
from messaging.insights.timeline import TIMELINE_WINDOW, contact_timeline
from segments.conditions.sql import condition_q

TABLE = Event._meta.db_table
DAY = timedelta(days=1)

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="partitions exist on PostgreSQL only")


@pytest.fixture
def monthly(db):
    """The events table as an install that has run for a while has it: one partition per month, from 15 months
    ago to the months ahead (the test database's own has only the partition its conversion made, before this
    month). The test's transaction undoes it."""
    now = timezone.now()
    for partition in partitions(TABLE):
        if partition.lower is None:
            partition_drop(partition)
    partitions_ensure(table=TABLE, now=month_start(now, add=-15), ahead=15 + AHEAD_MONTHS)
    return partitions(TABLE)


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


def test_the_events_table_is_partitioned_by_month_with_the_months_ahead(db):
    now = timezone.now()
    found = partitions(TABLE)
    assert is_partitioned(TABLE)
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
    partitions_ensure(table=TABLE, now=now)
    [next_month] = [p for p in partitions(TABLE) if p.lower == month_start(now, add=1)]
    partition_drop(next_month)
    [finding] = check_partitions()
    assert finding.state == PROBLEM and f"{month_start(now, add=1):%Y-%m}" in finding.detail

    assert ensure_partitions_task.apply().get() == {TABLE: [next_month.name]}
    assert [f.state for f in check_partitions()] == [OK]
    assert ensure_partitions_task.apply().get() == {TABLE: []}  # idempotent
    entry = BEAT_SCHEDULE["ensure-partitions"]
    assert entry["task"] == ensure_partitions_task.name and entry["options"]["expires"] < 24 * 60 * 60


_SCANNED = re.compile(rf"\bon ({TABLE}_\w+)")


def scanned(queries) -> list[set[str]]:
    """The partitions each captured statement on events reads, from its plan."""
    plans = []
    for query in queries:
        if TABLE not in query["sql"]:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {query['sql']}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        plans.append(set(_SCANNED.findall(plan)))
    return plans


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


@pytest.mark.parametrize("path", ["/events?limit=4", "/events?limit=4&name=visited", "/activity?limit=4", "contact"])
def test_newest_first_pages_stop_at_the_newest_months(history, contact, secret_client, path):
    path = f"/events/contact/{contact.id}?limit=4" if path == "contact" else path
    with CaptureQueriesContext(connection) as queries:
        assert secret_client.get(path).json()["hasMore"] is True
    [page] = statements(queries, "LIMIT")
    read = {node["Relation Name"] for node in plan_nodes(page, analyze=True) if node["Actual Loops"]}
    # The five rows of the page (4 and the one that says more follow) are all in the newest month.
    assert read and read <= in_window(partitions(TABLE), month_start(timezone.now()))


@pytest.mark.parametrize("path", ["/events", "/events?name=visited", "/activity", "/events/visited/usage"])
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
