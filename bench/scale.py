"""Herald at several sizes: the same measurements on seeded PostgreSQL databases, side by side in one run.

    python bench/seed.py --database herald_scale_1m --fresh --contacts 1000000 --events 10000000 --emails 2000000
    python bench/seed.py --database herald_scale_10m --fresh --contacts 10000000 --events 32876712 --emails 6575342 \
        --days 120    # ten times the density of the first: 100M events and 20M emails a year, its last 120 days
    python bench/scale.py --databases herald_scale_1m herald_scale_10m [--parts reads,accept,campaign,retention]

Each part runs on every database in turn (the databases alternating within a part), each in a process of its own:

- reads, in process through the API's test client or the services the API calls, a warm-up then `--runs` timed
  calls (median and slowest): a 3-filter segment count (`data.plan`, `data.age`, `event.purchase` within 30 days)
  and its first members page; the contacts search (`GET /contacts?search=`, a name and digits) and the first page
  without one; `GET /analytics/timeseries` (30 days); the timeline of a busy contact (the most events yesterday)
  and of a typical one; the reads over all of history: `GET /events/names`, `/activity/types`, the first pages of
  `GET /events` and `GET /activity`.
- accept: `/v1/track` (an event of one of 10,000 contacts, two data keys) and `/v1/send` (one new recipient each)
  through gunicorn (2 workers x 4 threads) with wrk at 50 connections, on each database and on an empty one made
  by the run: the rate on a seeded database over the empty one's.
- campaign: a campaign to the subscribed contacts of a `data.score` band sized to `--campaign-contacts` (all of
  them when the database has fewer), sent through the API with a worker consuming the bulk queue (the fan-out;
  nothing delivers): the time from the send call to every email row queued, and the worker's memory meanwhile.
  Its emails stay in the database.
- retention (changes the data, so last): the daily retention run of events as beat runs it, with a writer inserting
  an event every 10 ms meanwhile (its slowest insert is the longest any lock held it up): first the run that takes
  the cutoff past the end of the oldest whole month (that month's partition dropped, the first hours of the next
  deleted row by row), then the next day's run (a day of rows deleted in batches).

Prints JSON: per part, per database, the figures. Set BENCH_CACHE_DB and BENCH_BROKER_DB to run beside other
benchmarks (bench/serve.py).
"""

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.contacts_bench import TRACK_LUA
from bench.segments_bench import CONDITION as THREE_FILTERS
from bench.send_accept import send_options
from bench.serve import (
    BIN,
    BROKER_DB,
    CACHE_DB,
    PG,
    PYTHON,
    ROOT,
    bench_env,
    fresh_database,
    gunicorn,
    machine,
    setup_project,
    wrk,
    wrk_medians,
)

PARTS = ("reads", "accept", "campaign", "retention")
PORT = 18041
EMPTY = "herald_scale_empty"
ESTIMATE = """
SELECT sum(reltuples)::bigint FROM pg_class WHERE relkind = 'r'
AND (oid = %(table)s::regclass OR oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = %(table)s::regclass))
"""
CAMPAIGN_BODY = "<p>Hello {{ firstName }}, news for the {{ plan }} plan.</p>" * 8


def env_of(database: str, **extra: str) -> dict:
    return bench_env(database, API_RATE_LIMIT_PER_MINUTE="100000000", PUBLIC_URL="http://127.0.0.1", **extra)


def child(part: str, database: str, **options) -> dict:
    """Run one part on one database in a process of its own (Django set up on that database)."""
    arguments = [f"--{key.replace('_', '-')}={value}" for key, value in options.items()]
    done = subprocess.run(
        [PYTHON, __file__, "--child", part, "--databases", database, *arguments],
        cwd=ROOT,
        env=env_of(database),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def timed(call, runs: int) -> dict:
    call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


# In the child processes: Django is set up on the database the parent named.


def _project():
    from accounts.models import Project

    return Project.objects.order_by("created_at").first()


def _client(project):
    from django.test import Client

    from accounts.tenancy.services import project_regenerate_keys

    keys = project_regenerate_keys(project=project)
    return Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {keys.secret_key}")


def _get(client, path: str) -> dict | list:
    response = client.get(path)
    assert response.status_code == 200, (path, response.content[:300])
    return response.json()


def part_keys(args) -> dict:
    """Fresh keys of the seeded project (the secret key is shown once, at the seeding)."""
    from accounts.tenancy.services import project_regenerate_keys

    keys = project_regenerate_keys(project=_project())
    return {"secretKey": keys.secret_key, "publicKey": keys.public_key}


def part_reads(args) -> dict:
    from django.db import connection

    from contacts.models import Contact
    from messaging.insights.timeline import contact_timeline
    from segments.selectors import segment_members, segment_members_page
    from segments.services import segment_create

    project = _project()
    client = _client(project)
    runs = args.runs
    out: dict = {"database": connection.settings_dict["NAME"]}
    with connection.cursor() as cursor:
        for key, table in (
            ("contacts", "contacts_contact"),
            ("events", "contacts_event"),
            ("emails", "messaging_email"),
        ):
            # The planner's row estimate (a partitioned table's is its partitions').
            cursor.execute(ESTIMATE, {"table": table})
            out[key] = cursor.fetchone()[0]

    segment = segment_create(project=project, name=f"Scale {uuid.uuid4().hex[:6]}", condition=THREE_FILTERS)
    try:
        out["segment_three_filter_count"] = {
            **timed(lambda: segment_members(segment=segment).count(), runs),
            "members": segment.member_count,
        }
        out["segment_first_members_page"] = timed(
            lambda: segment_members_page(segment=segment, page=1, page_size=20), runs
        )
    finally:
        segment.delete()
    out["contacts_search_selective"] = timed(lambda: _get(client, "/contacts?limit=20&search=anna.smith12"), runs)
    out["contacts_first_page"] = timed(lambda: _get(client, "/contacts?limit=20"), runs)
    out["analytics_timeseries_30_days"] = timed(lambda: _get(client, "/analytics/timeseries"), runs)

    # The contacts with events in the last day, by how many: the busiest, and the one in the middle.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT contact_id FROM contacts_event WHERE project_id = %s AND created_at >= %s "
            "GROUP BY contact_id ORDER BY count(*) DESC, contact_id",
            [project.id, datetime.now(UTC) - timedelta(days=1)],
        )
        active = [row[0] for row in cursor.fetchall()]
    busy, typical = Contact.objects.get(pk=active[0]), Contact.objects.get(pk=active[len(active) // 2])
    for label, contact in (("busy", busy), ("typical", typical)):
        out[f"timeline_{label}_contact"] = {
            **timed(lambda contact=contact: contact_timeline(contact=contact), runs),
            "items": len(contact_timeline(contact=contact).items),
        }
    for label, path in (
        ("event_names", "/events/names"),
        ("activity_types", "/activity/types"),
        ("events_first_page", "/events?limit=20"),
        ("activity_first_page", "/activity?limit=20"),
    ):
        out[label] = timed(lambda path=path: _get(client, path), max(2, runs // 3))
    return out


def part_campaign(args) -> dict:
    """Make the campaign (a segment of a score band of about `--campaign-contacts` subscribed contacts) and print
    its id; the parent sends it through the API."""
    from contacts.models import Contact
    from segments.services import segment_create

    project = _project()
    subscribed = Contact.objects.filter(project=project, subscribed=True).count()
    # Lead scores are uniform over 0-999: a band of that share of them.
    band = min(1000, -(-1000 * args.campaign_contacts // subscribed))
    condition = {"logic": "AND", "groups": [{"filters": [
        {"field": "data.score", "operator": "lessThan", "value": band}
    ]}]}  # fmt: skip
    segment = segment_create(project=project, name=f"Score under {band} {uuid.uuid4().hex[:6]}", condition=condition)
    # The campaign goes to the subscribed ones among them.
    return {"segmentId": str(segment.id), "segmentMembers": segment.member_count, "scoreBand": band}


def part_retention(args) -> dict:
    from django.db import connection
    from django.test import override_settings

    from contacts.models import Contact, Event
    from contacts.services import events_purge_old
    from core.partitions import partitions

    project = _project()
    table = Event._meta.db_table
    now = datetime.now(UTC)
    months = [p for p in partitions(table) if p.lower is not None and p.upper <= now]
    writer_contact = Contact.objects.filter(project=project).first()
    out: dict = {"database": connection.settings_dict["NAME"], "partitions_before": len(partitions(table))}

    def days_to(moment: datetime) -> int:
        # The whole days back to the first cutoff at or after `moment` (retention counts its age in days).
        return int((now - moment).total_seconds() // 86400)

    def run(label: str, days: int) -> None:
        inserts: list[float] = []
        stop = threading.Event()

        def write() -> None:
            from django.db import connection as own

            while not stop.wait(0.01):
                started = time.perf_counter()
                Event.objects.create(project=project, contact=writer_contact, name="scale.writer")
                inserts.append((time.perf_counter() - started) * 1000)
            own.close()

        rows = Event.objects.filter(created_at__lt=now - timedelta(days=days))
        with override_settings(EVENT_RETENTION_DAYS=days):
            writer = threading.Thread(target=write)
            writer.start()
            started = time.perf_counter()
            deleted = events_purge_old()
            seconds = time.perf_counter() - started
            stop.set()
            writer.join()
        out[label] = {
            "retention_days": days,
            "rows_deleted": deleted,
            "seconds": round(seconds, 2),
            "partitions_left": len(partitions(table)),
            "rows_left_before_cutoff": rows.count(),
            "writer_inserts": len(inserts),
            "writer_median_ms": round(statistics.median(inserts), 1),
            "writer_slowest_ms": round(max(inserts), 1),
        }

    # Up to the second month: the oldest (part of a month, as seeded) goes, with the first hours of the next.
    run("first_month_and_hours", days_to(months[1].lower))
    # A whole month: the next run whose cutoff passes the end of that month.
    run("one_month_dropped", days_to(months[2].lower))
    run("next_day", days_to(months[2].lower) - 1)
    return out


CHILD_PARTS = {
    "keys": part_keys,
    "reads": part_reads,
    "campaign": part_campaign,
    "retention": part_retention,
}


# In the parent process.


def accept(databases: list[str], *, seconds: int, rounds: int) -> dict:
    """`/v1/track` and `/v1/send` acceptance on each database and on an empty one, alternating."""
    fresh_database(EMPTY)
    empty_keys = setup_project(env_of(EMPTY))
    keys = {EMPTY: empty_keys, **{database: child("keys", database) for database in databases}}
    runs: dict = {database: {"track": [], "send": []} for database in [EMPTY, *databases]}
    track_lua = TRACK_LUA.replace("USERS", "10000")
    for _ in range(rounds):
        for database in [EMPTY, *databases]:
            subprocess.run(["redis-cli", "-n", CACHE_DB, "FLUSHDB"], check=True, capture_output=True)
            with gunicorn(env_of(database), port=PORT, workers=2, threads=4) as base:
                track = {"key": keys[database]["publicKey"], "connections": 50, "method": "POST"}
                wrk(f"{base}/v1/track", seconds=3, request_lua=track_lua, **track)  # warm-up: most contacts made
                runs[database]["track"].append(wrk(f"{base}/v1/track", seconds=seconds, request_lua=track_lua, **track))
                send = send_options(keys[database]["secretKey"], 50)
                wrk(f"{base}/v1/send", seconds=3, **send)
                runs[database]["send"].append(wrk(f"{base}/v1/send", seconds=seconds, **send))
    refused = [run for paths in runs.values() for found in paths.values() for run in found if run["non_2xx"]]
    assert not refused, f"answers other than 2xx: {refused}"
    out = {database: {path: wrk_medians(found) for path, found in paths.items()} for database, paths in runs.items()}
    for database in databases:
        for path in ("track", "send"):
            rate = out[database][path]["median_requests_per_second"]
            out[database][path]["of_empty"] = round(rate / out[EMPTY][path]["median_requests_per_second"], 2)
    return out


def one(database: str, sql: str, *params):
    """The one value `sql` selects on `database`."""
    import psycopg

    with psycopg.connect(f"{PG}/{database}", autocommit=True) as connection:
        return connection.execute(sql, params).fetchone()[0]


@contextmanager
def bulk_worker(env: dict):
    """A Celery worker (prefork 2) consuming the bulk queue alone: a campaign's fan-out runs, nothing is delivered."""
    command = [str(BIN / "celery"), "-A", "config", "worker", "--queues", "bulk", "--concurrency", "2"]
    quiet = ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    process = subprocess.Popen([*command, *quiet], cwd=ROOT, env=env)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=60)


def campaign(database: str, *, contacts: int, timeout: float) -> dict:
    import httpx

    from bench.campaign_bench import MemorySampler, wait_for

    made = child("campaign", database, campaign_contacts=contacts)
    keys = child("keys", database)
    env = env_of(database)
    for db in {CACHE_DB, BROKER_DB}:
        subprocess.run(["redis-cli", "-n", db, "FLUSHDB"], check=True, capture_output=True)
    with (
        gunicorn(env, port=PORT, workers=2, threads=4) as base,
        bulk_worker(env) as worker,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['secretKey']}"}, timeout=60) as client,
    ):
        time.sleep(4)  # the worker's start
        body = {
            "name": "Scale campaign",
            "subject": "News for {{ firstName }}",
            "body": CAMPAIGN_BODY,
            "from": "news@bench.test",
            "type": "MARKETING",
            "audienceType": "SEGMENT",
            "segmentId": made["segmentId"],
        }
        created = client.post("/campaigns", json=body)
        assert created.status_code == 201, created.text
        campaign_id = created.json()["data"]["id"]
        sampler = MemorySampler(worker.pid)
        sampler.start()
        started = time.perf_counter()
        sent = client.post(f"/campaigns/{campaign_id}/send", json={})
        assert sent.status_code == 200, sent.text
        send_call = time.perf_counter() - started

        # The fan-out's job says when it is done; the rows are counted once it is.
        job = "SELECT status FROM accounts_job WHERE params->>'campaignId' = %s"
        done = wait_for(lambda: one(database, job, campaign_id) in ("COMPLETED", "FAILED"), timeout, 0.5)
        sampler.stop.set()
        sampler.join()
    recipients = one(database, "SELECT total_recipients FROM campaigns_campaign WHERE id = %s", campaign_id)
    return {
        **made,
        "send_call_seconds": round(send_call, 2),
        "all_queued_seconds": round(done, 1) if done is not None else None,
        "job": one(database, job, campaign_id),
        "recipients": recipients,
        "queued": one(database, "SELECT count(*) FROM messaging_email WHERE campaign_id = %s", campaign_id),
        "worker_memory": sampler.summary(),
    }


def port_free(port: int) -> None:
    """gunicorn binds with SO_REUSEPORT: a server left running on the port would silently share the load."""
    import socket

    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", port)) == 0:
            raise SystemExit(f"port {port} is in use: stop what listens there first")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--databases", nargs="+", required=True)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--seconds", type=int, default=10, help="of each wrk run")
    parser.add_argument("--rounds", type=int, default=2, help="of the accept part, the databases alternating")
    parser.add_argument("--campaign-contacts", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for a campaign's fan-out")
    parser.add_argument("--child", choices=CHILD_PARTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import django

        django.setup()
        print(json.dumps(CHILD_PARTS[args.child](args), default=str))
        return
    port_free(PORT)
    parts = args.parts.split(",")
    out: dict = {"benchmark": "scale", "machine": machine(), "databases": args.databases}
    for part in parts:
        started = time.perf_counter()
        if part == "accept":
            out[part] = accept(args.databases, seconds=args.seconds, rounds=args.rounds)
        elif part == "campaign":
            out[part] = {
                database: campaign(database, contacts=args.campaign_contacts, timeout=args.timeout)
                for database in args.databases
            }
        else:
            out[part] = {database: child(part, database, runs=args.runs) for database in args.databases}
        out[f"{part}_seconds"] = round(time.perf_counter() - started, 1)
        print(json.dumps({part: out[part]}, default=str), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
