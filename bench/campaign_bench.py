"""A campaign to a large audience, end to end, on PostgreSQL and Redis with real processes: gunicorn (as
`bench/serve.py` starts it), one Celery worker (prefork, concurrency 4) and Postfix's smtp-sink.

    python bench/campaign_bench.py [--contacts 100000] [--load-seconds 20] [--concurrency 8]

1. Seeds N subscribed contacts in one INSERT ... SELECT, creates a campaign to ALL through the HTTP API and sends it.
2. Measures from the send call to every email row queued (the fan-out; target < 20 s at 100,000), and to every
   email delivered into the sink, while sampling the worker's memory (RSS of its main process and of each pool
   process; target flat and < 150 MB).
3. Counts what reached the sink (its dump file): every campaign email's Message-ID exactly once.
4. Measures `POST /v1/send` latency under a steady transactional load (`--concurrency` clients, one new recipient
   per request, for `--load-seconds`) before the campaign (idle) and right after the send call, while the campaign
   is fanned out and delivered (target: p99 < 2x idle).

Set BENCH_DATABASE, BENCH_CACHE_DB and BENCH_BROKER_DB to run beside other benchmarks (bench/serve.py).
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.delivery import tree_cpu_seconds
from bench.serve import BROKER_DB, CACHE_DB, bench_env, database_name, fresh_database, gunicorn, machine, setup_project

SINK_PORT = 2527
PORT = 18031
SINK_DUMP = Path("/tmp/herald-bench-campaign-sink")
SEED_CONTACTS = """
INSERT INTO contacts_contact (id, project_id, email, subscribed, data, created_at, updated_at)
SELECT gen_random_uuid(), %(project)s::uuid, 'c' || lpad(g::text, 7, '0') || '@sink.test', true,
       jsonb_build_object('firstName', 'Reader' || g, 'plan', (ARRAY['free','pro','team'])[1 + g %% 3]),
       now(), now()
FROM generate_series(1, %(count)s) AS g
"""
CAMPAIGN = {
    "name": "Bench campaign",
    "subject": "News for {{ firstName }}",
    "body": "<html><body><h1>Hello {{ firstName }}</h1>"
    + "<p>Your plan is {{ plan }}. Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>" * 8
    + '<p><a href="https://example.test/offer">See the offer</a></p></body></html>',
    "from": "news@bench.test",
    "fromName": "Bench",
    "type": "MARKETING",
    "audienceType": "ALL",
}


def start_sink() -> subprocess.Popen:
    """smtp-sink appending every message to one dump file (read once the run is over)."""
    shutil.rmtree(SINK_DUMP, ignore_errors=True)
    SINK_DUMP.mkdir(mode=0o777)
    SINK_DUMP.chmod(0o777)
    return subprocess.Popen(
        ["/usr/sbin/smtp-sink", "-u", "nobody", "-D", str(SINK_DUMP / "dump"), f"127.0.0.1:{SINK_PORT}", "1024"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def sink_message_ids() -> list[str]:
    ids = []
    with open(SINK_DUMP / "dump", "rb") as dump:
        for line in dump:
            if line[:12].lower() == b"message-id: ":
                ids.append(line[12:].strip().decode())
    return ids


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class MemorySampler(threading.Thread):
    """The RSS of the worker's main process and of each of its pool processes, every half second."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], threading.Event()

    def run(self) -> None:
        from config.tests.processes import children

        started = time.perf_counter()
        while not self.stop.wait(0.5):
            try:
                pool = [rss_mb(child) for child in children(self.pid)]
                self.samples.append((round(time.perf_counter() - started, 1), round(rss_mb(self.pid), 1), pool))
            except (FileNotFoundError, ProcessLookupError):
                continue

    def summary(self) -> dict:
        pool = [max(sample[2]) for sample in self.samples if sample[2]]
        return {
            "samples": len(self.samples),
            "main_mb_first_last_max": [self.samples[0][1], self.samples[-1][1], max(s[1] for s in self.samples)],
            "largest_pool_process_mb_first_last_max": [pool[0], pool[-1], max(pool)] if pool else None,
            "every_10th_sample": [[s[0], s[1], [round(p) for p in s[2]]] for s in self.samples[::10]],
        }


async def _send_load(base: str, key: str, seconds: float, concurrency: int, tag: str) -> dict:
    latencies, failures, errors = [], 0, 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"}, limits=limits) as client:

        async def one_client(number: int) -> None:
            nonlocal failures, errors
            counter = 0
            while time.perf_counter() < deadline:
                counter += 1
                body = {
                    "to": f"{tag}-{number}-{counter}@load.test",
                    "from": {"name": "Bench", "email": "alerts@bench.test"},
                    "subject": "Your code",
                    "body": "<p>Your code is 123456</p>",
                }
                started = time.perf_counter()
                try:
                    response = await client.post("/v1/send", json=body, timeout=30)
                except httpx.TransportError:  # a kept-alive connection the server closed meanwhile: counted
                    errors += 1
                    continue
                latencies.append((time.perf_counter() - started) * 1000)
                failures += response.status_code != 200

        await asyncio.gather(*(one_client(number) for number in range(concurrency)))
    latencies.sort()
    return {
        "requests": len(latencies),
        "failures": failures,
        "connection_errors": errors,
        "requests_per_second": round(len(latencies) / seconds, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1),
    }


def send_load(base: str, key: str, seconds: float, concurrency: int, tag: str) -> dict:
    return asyncio.run(_send_load(base, key, seconds, concurrency, tag))


def wait_for(condition, timeout: float, interval: float = 0.2) -> float | None:
    """Seconds until `condition()` held, or None after `timeout`."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if condition():
            return time.perf_counter() - started
        time.sleep(interval)
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contacts", type=int, default=100_000)
    parser.add_argument("--load-seconds", type=float, default=20)
    parser.add_argument("--concurrency", type=int, default=8, help="clients of the transactional load")
    parser.add_argument("--worker-concurrency", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the delivery")
    args = parser.parse_args()

    database = database_name("herald_bench_campaign")
    fresh_database(database)
    env = bench_env(
        database,
        EMAIL_URL=f"smtp://127.0.0.1:{SINK_PORT}",
        API_RATE_LIMIT_PER_MINUTE="100000000",
        PUBLIC_URL="http://127.0.0.1",
    )
    for db in {CACHE_DB, BROKER_DB}:
        subprocess.run(["redis-cli", "-n", db, "FLUSHDB"], check=True, capture_output=True)
    project = setup_project(env)
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connection
    from django.db.models import Count

    from campaigns.sending import campaigns_finish_sending
    from config.tests.processes import celery_worker
    from messaging.models import Email

    seeding = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(SEED_CONTACTS, {"project": project["id"], "count": args.contacts})
        cursor.execute("ANALYZE contacts_contact")
    seeded_in = time.perf_counter() - seeding

    result: dict = {"benchmark": "campaign", "contacts": args.contacts, "machine": machine()}
    sink = start_sink()
    try:
        with gunicorn(env, port=PORT, workers=2, threads=4) as base:
            key = project["secretKey"]
            worker_env = {"EMAIL_URL": env["EMAIL_URL"], "CACHE_URL": env["CACHE_URL"], "PUBLIC_URL": env["PUBLIC_URL"]}
            with celery_worker(concurrency=args.worker_concurrency, **worker_env) as worker:
                time.sleep(4)  # worker start-up
                result["send_idle"] = send_load(base, key, args.load_seconds, args.concurrency, "idle")
                wait_for(lambda: not Email.objects.filter(status__in=["QUEUED", "SENDING"]).exists(), 120)
                with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
                    created = client.post("/campaigns", json=CAMPAIGN)
                    assert created.status_code == 201, created.text
                    campaign_id = created.json()["data"]["id"]
                    sampler = MemorySampler(worker.pid)
                    sampler.start()
                    cpu = tree_cpu_seconds(worker.pid)
                    started = time.perf_counter()
                    response = client.post(f"/campaigns/{campaign_id}/send", json={})
                    assert response.status_code == 200, response.text
                send_call = time.perf_counter() - started
                load = {}
                loader = threading.Thread(
                    target=lambda: load.update(send_load(base, key, args.load_seconds, args.concurrency, "during"))
                )
                loader.start()
                campaign_emails = Email.objects.filter(campaign_id=campaign_id)
                queued_in = wait_for(lambda: campaign_emails.count() >= args.contacts, args.timeout, 0.5)
                queued_at = time.perf_counter() - started
                delivered_in = wait_for(
                    lambda: not campaign_emails.filter(status__in=["QUEUED", "SENDING"]).exists(), args.timeout, 1
                )
                worker_cpu = tree_cpu_seconds(worker.pid) - cpu
                loader.join()
                sampler.stop.set()
                sampler.join()
    finally:
        sink.terminate()
        sink.wait()
    delivered_seconds = (queued_at + delivered_in) if delivered_in is not None else None
    campaigns_finish_sending()
    statuses = dict(campaign_emails.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    expected = {email.message_id for email in campaign_emails.only("message_id")}
    arrived = sink_message_ids()
    campaign_arrivals = [message_id for message_id in arrived if message_id in expected]
    result.update(
        {
            "seed_seconds": round(seeded_in, 1),
            "send_call_seconds": round(send_call, 2),
            "all_queued_seconds": round(queued_in, 1) if queued_in is not None else None,
            "all_delivered_seconds": round(delivered_seconds, 1) if delivered_seconds else None,
            "delivered_per_second": round(args.contacts / delivered_seconds, 1) if delivered_seconds else None,
            "worker_cpu_ms_per_email": round(worker_cpu / args.contacts * 1000, 3),
            "email_statuses": statuses,
            "sink": {
                "messages": len(arrived),
                "campaign_messages": len(campaign_arrivals),
                "distinct_campaign_message_ids": len(set(campaign_arrivals)),
                "campaign_emails_stored": len(expected),
                "exactly_once": len(campaign_arrivals) == len(set(campaign_arrivals)) == len(expected) == args.contacts,
            },
            "send_during_campaign": load,
            "p99_during_over_idle": round(load["p99_ms"] / result["send_idle"]["p99_ms"], 2),
            "worker_memory": sampler.summary(),
        }
    )
    from campaigns.models import Campaign

    result["campaign_status"] = Campaign.objects.get(pk=campaign_id).status
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
