"""`POST /v1/track` and `POST /v1/send` through the WSGI application gunicorn serves, called in this process: the
CPU of one successful request without a server, wrk or the network in the way (PostgreSQL and Redis still are).

Both calls are answered by the fast route (accounts.http.fastroute); `--django` sends the same requests to
Django's application instead (`config.wsgi.django_application`, the one the fast route hands declined requests to),
so that the two differ by the fast route alone. `--path` measures one of the two. Each call's PostgreSQL backend
CPU is printed too (read from /proc: the server must run on this machine).

    python bench/fastroute_inprocess.py [--calls 3000] [--rounds 3] [--path /v1/send] [--django]

Under callgrind, the CPU instructions of the measured calls alone (what a busy machine does not change; compare
two versions of the code by this count per call), one dump per path and round, in the order printed, and per
thread, so that the delivery hand-over thread (which wakes by the clock, however slow the calls) is left out:

    valgrind --tool=callgrind --separate-threads=yes --instr-atstart=no --callgrind-out-file=/tmp/fast.cg \
        python bench/fastroute_inprocess.py --calls 300 --rounds 1 --callgrind
    grep -H '^totals:' /tmp/fast.cg.*-01    # the calling thread: each file one path's calls, divide by the calls
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import (
    backend_cpu_seconds,
    backend_pid,
    bench_env,
    callgrind,
    database_name,
    fresh_database,
    setup_project,
    wsgi_environ,
)


def run(application, path: str, key: str, payload, calls: int, instrument: bool = False):
    """(CPU microseconds of the calling thread, wall microseconds, CPU microseconds of the PostgreSQL backend) per
    successful call. The thread's CPU leaves out the delivery hand-over thread and the database and Redis servers;
    it includes the client side of their round trips."""
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    if instrument:
        callgrind(True)
    backend = backend_pid()
    cpu, wall, database = time.thread_time(), time.perf_counter(), backend_cpu_seconds(backend)
    for n in range(calls):
        body = json.dumps(payload(n)).encode()
        b"".join(application(wsgi_environ("POST", path, {"HTTP_AUTHORIZATION": f"Bearer {key}"}, body), start_response))
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    database = backend_cpu_seconds(backend) - database
    assert backend_pid() == backend, "the database connection was replaced during the calls"
    if instrument:
        callgrind(False, dump=path)
    assert set(statuses) == {"200 OK"}, set(statuses)
    return cpu / calls * 1e6, wall / calls * 1e6, database / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database", default=database_name("herald_bench_fast"))
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--path", choices=["/v1/track", "/v1/send"], help="only this path")
    parser.add_argument("--django", action="store_true", help="through Django's application instead")
    parser.add_argument("--callgrind", action="store_true", help="instrument only the measured calls")
    args = parser.parse_args()

    fresh_database(args.database)
    # The connection is kept for the whole run (under callgrind the calls are slow enough to outlive the 60 s a
    # process keeps one by default, which would add connecting to the calls measured).
    env = bench_env(args.database, API_RATE_LIMIT_PER_MINUTE="100000000", DATABASE_CONN_MAX_AGE="3600")
    redis = env["CACHE_URL"].rsplit("/", 1)[0]
    env.update(CACHE_URL=f"{redis}/{args.redis_db}", CELERY_BROKER_URL=f"{redis}/{args.redis_db + 1}")
    keys = setup_project(env)
    os.environ.update(env)
    from config.wsgi import application, django_application

    if args.django:
        application = django_application

    cases = {
        "/v1/track": (keys["publicKey"], lambda n: {"email": f"t{n % 500}@bench.test", "event": "signup"}),
        "/v1/send": (
            keys["secretKey"],
            lambda n: {"to": f"s{n % 500}@bench.test", "from": "hi@bench.test", "subject": "Hi", "body": "<p>Hi</p>"},
        ),
    }
    if args.path:
        cases = {args.path: cases[args.path]}
    results = {path: [] for path in cases}
    for path, (key, payload) in cases.items():
        run(application, path, key, payload, 200)  # warm-up: caches, prepared statements
    for _ in range(args.rounds):
        for path, (key, payload) in cases.items():
            results[path].append(run(application, path, key, payload, args.calls, args.callgrind))
    for path, rounds in results.items():
        cpu, wall, database = (statistics.median(r[i] for r in rounds) for i in range(3))
        print(
            f"{path}: {cpu:.0f} us CPU, {wall:.0f} us wall, {database:.0f} us PostgreSQL CPU per call"
            f" (median of {args.rounds} x {args.calls})"
        )
    from django.core.cache import caches

    caches["default"].clear()


if __name__ == "__main__":
    main()
