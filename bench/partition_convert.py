"""The in-place conversion of a history table into monthly partitions (events: contacts 0008; emails: messaging
0012 and 0013) on a table of --rows rows, timed while a writer inserts a row every 10 ms, against copying the same
rows into a new table with its indexes (the alternative it avoids), in the same run.

With `--table emails`, then a lookup of an email by id on the table as it stands after a year and more of months
(one partition per month over the 400 days the rows span, ids UUIDv7 of their `created_at`), with and without the
created_at window its id names (`messaging.models.created_window`): µs per lookup over --lookups random ids, as the
ORM sends a statement (values bound, not prepared) and prepared.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch> python bench/partition_convert.py --rows 1000000
    DATABASE_URL=... python bench/partition_convert.py --table emails --rows 1000000

The database is dropped and made again: give it a scratch name."""

import argparse
import os
import random
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg

# A UUIDv7 of the timestamp `moment` (SQL), as `contacts.services._PG_UUID7` makes one of the clock.
V7 = (
    "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing "
    "substring(int8send((extract(epoch FROM {moment}) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), "
    "'hex')::uuid"
)
EMAIL_COLUMNS = (
    "id, project_id, contact_id, to_email, to_name, campaign_id, source, type, from_email, from_name, reply_to, "
    "subject, html, rendered, headers, message_id, provider_message_id, status, attempts, last_error, opens, clicks, "
    "created_at, updated_at"
)
# One email row of `{moment}` (SQL), `{i}` its number: one in four of a campaign (one contact each: the rows are
# seeded before the (campaign, contact) index stops being unique).
EMAIL_VALUES = (
    f"{V7}, p, md5(({{i}} %% 1000)::text)::uuid, 'r' || {{i}} || '@example.test', '', "
    "CASE WHEN {i} %% 4 = 0 THEN md5('c' || {i})::uuid END, 'api', 'TRANSACTIONAL', 'hi@example.test', '', '', "
    "'Hello', '<p>Hello</p>', true, '{{}}'::jsonb, '<' || {i} || '@example.test>', '', 'DELIVERED', 1, '', 0, 0, "
    "{moment}, {moment}"
)
TABLES = {
    # table, migration target before, migrations that convert it, seed INSERT of %s rows, indexes of the copy
    "events": (
        "contacts_event",
        [("contacts", "0007")],
        [("contacts", "0008")],
        "INSERT INTO contacts_event (id, project_id, contact_id, name, data, created_at) "
        "SELECT gen_random_uuid(), p, c, 'n' || (i %% 20), '{}'::jsonb, now() - (i %% 400) * interval '1 day' "
        "FROM generate_series(1, %s) i, (SELECT gen_random_uuid() p) project, "
        "LATERAL (SELECT md5((i %% 1000)::text)::uuid c) contact",
        ["id", "project_id, created_at, id", "contact_id, created_at, id", "project_id, name, created_at, contact_id"],
        "INSERT INTO contacts_event (id, project_id, contact_id, name, data, created_at) "
        "VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'w', '{}', now())",
    ),
    "emails": (
        "messaging_email",
        [("contacts", "0008"), ("messaging", "0011")],
        [("messaging", "0012"), ("messaging", "0013")],
        f"INSERT INTO messaging_email ({EMAIL_COLUMNS}) "
        f"SELECT {EMAIL_VALUES.format(i='i', moment='s.moment')} "
        "FROM generate_series(1, %s) i, (SELECT gen_random_uuid() p) project, "
        "LATERAL (SELECT now() - (i %% 400) * interval '1 day' - (i %% 86400) * interval '1 second' moment) s",
        [
            "id",
            "project_id, created_at",
            "status, claimed_at",
            "contact_id, created_at",
            "campaign_id, contact_id",
            "template_id",
            "attachments_id",
            "provider_message_id",
            "project_id, bounced_at",
            "project_id, complained_at",
            "created_at",
        ],
        f"INSERT INTO messaging_email ({EMAIL_COLUMNS}) "
        f"SELECT {EMAIL_VALUES.format(i='i', moment='now()')} "
        "FROM (SELECT gen_random_uuid() p, (random() * 1e9)::bigint i) project",
    ),
}

parser = argparse.ArgumentParser()
parser.add_argument("--table", choices=sorted(TABLES), default="events")
parser.add_argument("--rows", type=int, default=1_000_000)
parser.add_argument("--lookups", type=int, default=5000)
args = parser.parse_args()
table, before, conversion, seed, indexes, insert = TABLES[args.table]
url = os.environ["DATABASE_URL"]
name = url.rsplit("/", 1)[1]
admin = url.rsplit("/", 1)[0] + "/postgres"
with psycopg.connect(admin, autocommit=True) as conn:
    conn.execute(f"DROP DATABASE IF EXISTS {name}")
    conn.execute(f"CREATE DATABASE {name}")
manage = [sys.executable, "manage.py", "migrate", "-v0"]
for app, migration in before:
    subprocess.run([*manage, app, migration], check=True)

with psycopg.connect(url, autocommit=True) as conn:
    conn.execute("SET session_replication_role = replica")  # no foreign-key checks: the rows name no project
    started = time.monotonic()
    conn.execute(seed, [args.rows])
    conn.execute(f"VACUUM ANALYZE {table}")
    print(f"seeded {args.rows:,} rows in {time.monotonic() - started:.1f}s", flush=True)
    started = time.monotonic()
    conn.execute(f"CREATE TABLE copied (LIKE {table})")
    conn.execute(f"INSERT INTO copied SELECT * FROM {table}")
    for columns in indexes:
        conn.execute(f"CREATE INDEX ON copied ({columns})")
    copy_seconds = time.monotonic() - started
    conn.execute("DROP TABLE copied")
    print(f"copy with its indexes (peer): {copy_seconds:.1f}s", flush=True)

latencies, stop = [], threading.Event()


def writer():
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        while not stop.is_set():
            began = time.monotonic()
            conn.execute(insert, [])
            latencies.append(time.monotonic() - began)
            time.sleep(0.01)


thread = threading.Thread(target=writer)
thread.start()
started = time.monotonic()
for app, migration in conversion:
    subprocess.run([*manage, app, migration], check=True)
convert_seconds = time.monotonic() - started
stop.set()
thread.join()
latencies.sort()
print(
    f"conversion in place: {convert_seconds:.1f}s (ratio to the copy {convert_seconds / copy_seconds:.2f}); "
    f"{len(latencies)} writes meanwhile, median {latencies[len(latencies) // 2] * 1000:.1f} ms, "
    f"slowest {latencies[-1] * 1000:.0f} ms",
    flush=True,
)


def lookups() -> None:
    """The rows spread over one partition per month (the former table's rows moved into them), then lookups by id
    with and without the window of `messaging.models.created_window` (a day either side of the id's time)."""
    now = datetime.now(UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        [(legacy,)] = conn.execute(
            "SELECT child.relname FROM pg_inherits JOIN pg_class child ON child.oid = inhrelid "
            "WHERE inhparent = 'messaging_email'::regclass AND child.relname LIKE 'messaging_email_before_%'"
        ).fetchall()
        conn.execute(f"ALTER TABLE messaging_email DETACH PARTITION {legacy}")
        first = datetime(now.year - 2, now.month, 1, tzinfo=UTC)
        month = first
        while month < now + timedelta(days=130):
            following = (month + timedelta(days=32)).replace(day=1)
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS messaging_email_{month:%Y%m} PARTITION OF messaging_email "
                f"FOR VALUES FROM ('{month.isoformat()}') TO ('{following.isoformat()}')"
            )
            month = following
        started = time.monotonic()
        conn.execute(f"INSERT INTO messaging_email SELECT * FROM {legacy}")
        conn.execute(f"DROP TABLE {legacy}")
        conn.execute("VACUUM ANALYZE messaging_email")
        [(count,)] = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'messaging_email'::regclass"
        ).fetchall()
        print(f"rows moved into {count} monthly partitions in {time.monotonic() - started:.1f}s", flush=True)
        ids = [row[0] for row in conn.execute("SELECT id FROM messaging_email TABLESAMPLE SYSTEM (1)").fetchall()]
        picked = random.Random(7).choices(ids, k=args.lookups)
        margin = timedelta(days=1)
        plain = "SELECT id, status FROM messaging_email WHERE id = %s"
        windowed = "SELECT id, status FROM messaging_email WHERE id = %s AND created_at BETWEEN %s AND %s"
        # As the ORM sends a statement (its values bound, not prepared: planned with them, so the window prunes at
        # planning), and prepared (planned once, pruned as it runs).
        for prepared in (False, True, False, True):
            for label, sql, params in (
                ("without the window", plain, lambda email_id: [email_id]),
                ("with the window", windowed, lambda email_id: [email_id, *window(email_id, margin)]),
            ):
                with conn.cursor() as cursor:
                    for email_id in picked[:200]:  # warm: the pages cached
                        cursor.execute(sql, params(email_id), prepare=prepared)
                    started = time.perf_counter()
                    for email_id in picked:
                        cursor.execute(sql, params(email_id), prepare=prepared)
                        assert cursor.fetchone() is not None
                    per = (time.perf_counter() - started) / len(picked) * 1e6
                how = "prepared" if prepared else "bound"
                print(f"lookup by id {label} ({how}): {per:.0f} µs", flush=True)


def window(email_id, margin):
    moment = datetime.fromtimestamp((email_id.int >> 80) / 1000, tz=UTC)
    return moment - margin, moment + margin


if args.table == "emails":
    lookups()
