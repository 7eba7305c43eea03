"""Delivery's CPU per email, in one process: `emails_deliver` over N queued 5 KB emails (DKIM signing, events) in
batches of DELIVERY_BATCH_SIZE into Postfix's smtp-sink, timed with the process's CPU clock and the PostgreSQL
backend's (read from /proc), so that a busy machine changes the figure little.

    python bench/delivery_cpu.py [--emails 2000] [--profile]

`--profile` runs the same batches under cProfile (slower) and adds the share of each step of an email (claim,
MIME build, DKIM signature, SMTP, SENT mark, events) and the functions costing the most.

Under callgrind, the CPU instructions of the delivery alone (what a busy machine does not change):

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/delivery.cg \
        python bench/delivery_cpu.py --emails 600 --callgrind
    callgrind_annotate /tmp/delivery.cg | grep 'PROGRAM TOTALS'    # divide by the emails printed

`--sink python` delivers into `bench/smtp_sink.py` (aiosmtpd, offering PIPELINING) instead of Postfix's smtp-sink,
on `--sink-port`. `--round-trips` counts the SMTP exchange's round trips per email: each time the worker waits for
a reply after writing.
"""

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import smtplib
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.delivery import SINK_PORT, seed_herald, start_sink
from bench.serve import backend_cpu_seconds, bench_env, callgrind, database_name, fresh_database, machine, manage

# The steps of an email, by the function that does each (cumulative time under cProfile).
STEPS = {
    "claim": "emails_claim",
    "build (MIME)": "build",
    "dkim signature": "sign",
    "smtp": "send",
    "sent mark": "_mark_sent",
    "sent marks": "_mark_sent_all",
    "events": "_record_events",
}


class RoundTrips:
    """Counts the round trips of every SMTP exchange in this process while installed: each wait for a reply that
    follows a write (smtplib writes a command or the message with `send`, and waits in `getreply`)."""

    def __init__(self):
        self.count, self._written = 0, False
        self._send, self._getreply = smtplib.SMTP.send, smtplib.SMTP.getreply

    def __enter__(self):
        counter = self

        def send(smtp, data):
            counter._written = True
            return counter._send(smtp, data)

        def getreply(smtp):
            if counter._written:
                counter.count, counter._written = counter.count + 1, False
            return counter._getreply(smtp)

        smtplib.SMTP.send, smtplib.SMTP.getreply = send, getreply
        return self

    def __exit__(self, *exc_info):
        smtplib.SMTP.send, smtplib.SMTP.getreply = self._send, self._getreply


def _start_sink(kind: str, port: int) -> subprocess.Popen:
    if kind == "python":
        return subprocess.Popen([sys.executable, str(Path(__file__).with_name("smtp_sink.py")), str(port)])
    return start_sink(port)


def _deliver_all(ids: list[str], size: int) -> None:
    from messaging.sending.delivery import emails_deliver

    for start in range(0, len(ids), size):
        emails_deliver(email_ids=ids[start : start + size])


def _steps(profile: cProfile.Profile, count: int) -> dict:
    stats = pstats.Stats(profile)
    wanted = {
        ("messaging/sending/delivery.py", "emails_claim"): "claim",
        ("messaging/sending/mime.py", "build"): "build (MIME)",
        ("domains/services.py", "domain_sign_message"): "dkim signature",
        ("messaging/sending/transport.py", "send"): "smtp",
        ("messaging/sending/delivery.py", "_mark_sent"): "sent marks",
        ("messaging/sending/delivery.py", "_marks_flush"): "sent marks",
        ("messaging/sending/delivery.py", "_record_events"): "events",
    }
    steps: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():
        for (suffix, function), step in wanted.items():
            if filename.endswith(suffix) and name == function:
                steps[step] = steps.get(step, 0.0) + cumulative
    total = stats.total_tt
    out = {step: round(seconds / count * 1000, 3) for step, seconds in steps.items()}
    out["total (profiled)"] = round(total / count * 1000, 3)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue(), file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--callgrind", action="store_true", help="instrument only the measured batches")
    parser.add_argument("--sink", choices=["smtp-sink", "python"], default="smtp-sink")
    parser.add_argument("--sink-port", type=int, default=SINK_PORT)
    parser.add_argument("--round-trips", action="store_true", help="count the SMTP round trips per email")
    args = parser.parse_args()
    database = database_name("herald_bench_delivery_cpu")
    fresh_database(database)
    env = bench_env(database, EMAIL_URL=f"smtp://127.0.0.1:{args.sink_port}")
    manage(env, "migrate", "--no-input", "-v", "0")
    manage(env, "create_project", "--name", "Bench", "--owner-email", "b@bench.test", "--verified-domain", "bench.test")
    seed_herald(env, args.emails)
    from django.conf import settings
    from django.db import connection

    from messaging.models import Email

    ids = [str(i) for i in Email.objects.order_by("created_at").values_list("id", flat=True)]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE messaging_email")
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    warm, ids = ids[:100], ids[100:]
    sink = _start_sink(args.sink, args.sink_port)
    round_trips = RoundTrips() if args.round_trips else contextlib.nullcontext()
    try:
        time.sleep(2 if args.sink == "python" else 0.5)
        _deliver_all(warm, settings.DELIVERY_BATCH_SIZE)  # the key, the connection, imports: not per email
        profile = cProfile.Profile(time.process_time) if args.profile else None
        cpu, database_cpu, wall = time.process_time(), backend_cpu_seconds(backend), time.perf_counter()
        if profile:
            profile.enable()
        if args.callgrind:
            callgrind(True)
        with round_trips:
            _deliver_all(ids, settings.DELIVERY_BATCH_SIZE)
        if args.callgrind:
            callgrind(False)
        if profile:
            profile.disable()
        cpu, database_cpu = time.process_time() - cpu, backend_cpu_seconds(backend) - database_cpu
        wall = time.perf_counter() - wall
    finally:
        sink.terminate()
    sent = Email.objects.filter(status="SENT").count()
    count = len(ids)
    result = {
        "benchmark": "delivery_cpu",
        "emails": count,
        "sent": sent - len(warm),
        "machine": machine(),
        "worker_cpu_ms_per_email": round(cpu / count * 1000, 3),
        "postgres_cpu_ms_per_email": round(database_cpu / count * 1000, 3),
        "wall_ms_per_email": round(wall / count * 1000, 3),
    }
    if args.round_trips:
        result["smtp_round_trips_per_email"] = round(round_trips.count / count, 3)
    if profile:
        result["profiled_ms_per_email"] = _steps(profile, count)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
