"""The in-place conversion of the events table into monthly partitions (contacts 0008) on a table of --rows rows,
timed step by step while a writer inserts an event every 10 ms, against copying the same rows into a new table (the
alternative it avoids), in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch> python bench/partition_convert.py --rows 1000000

The database is dropped and made again: give it a scratch name."""

import argparse
import os
import subprocess
import sys
import threading
import time

import psycopg

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=1_000_000)
args = parser.parse_args()
url = os.environ["DATABASE_URL"]
name = url.rsplit("/", 1)[1]
admin = url.rsplit("/", 1)[0] + "/postgres"
with psycopg.connect(admin, autocommit=True) as conn:
    conn.execute(f"DROP DATABASE IF EXISTS {name}")
    conn.execute(f"CREATE DATABASE {name}")
manage = [sys.executable, "manage.py", "migrate", "-v0"]
subprocess.run([*manage, "contacts", "0007"], check=True)

with psycopg.connect(url, autocommit=True) as conn:
    conn.execute("SET session_replication_role = replica")  # no foreign-key checks: the rows name no project
    started = time.monotonic()
    conn.execute(
        "INSERT INTO contacts_event (id, project_id, contact_id, name, data, created_at) "
        "SELECT gen_random_uuid(), p, c, 'n' || (i %% 20), '{}'::jsonb, now() - (i %% 400) * interval '1 day' "
        "FROM generate_series(1, %s) i, (SELECT gen_random_uuid() p) project, "
        "LATERAL (SELECT md5((i %% 1000)::text)::uuid c) contact",
        [args.rows],
    )
    conn.execute("VACUUM ANALYZE contacts_event")
    print(f"seeded {args.rows:,} rows in {time.monotonic() - started:.1f}s", flush=True)
    started = time.monotonic()
    conn.execute("CREATE TABLE copied (LIKE contacts_event)")
    conn.execute("INSERT INTO copied SELECT * FROM contacts_event")
    for columns in (
        "id",
        "project_id, created_at, id",
        "contact_id, created_at, id",
        "project_id, name, created_at, contact_id",
    ):
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
            conn.execute(
                "INSERT INTO contacts_event (id, project_id, contact_id, name, data, created_at) "
                "VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'w', '{}', now())"
            )
            latencies.append(time.monotonic() - began)
            time.sleep(0.01)


thread = threading.Thread(target=writer)
thread.start()
started = time.monotonic()
subprocess.run([*manage, "contacts", "0008"], check=True)
convert_seconds = time.monotonic() - started
stop.set()
thread.join()
latencies.sort()
print(
    f"conversion in place: {convert_seconds:.1f}s (ratio to the copy {convert_seconds / copy_seconds:.2f}); "
    f"{len(latencies)} writes meanwhile, median {latencies[len(latencies) // 2] * 1000:.1f} ms, "
    f"slowest {latencies[-1] * 1000:.0f} ms"
)
