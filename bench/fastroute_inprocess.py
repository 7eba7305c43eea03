"""`POST /v1/track` and `POST /v1/send` through the WSGI application gunicorn serves, called in this process: the
CPU of one successful request without a server, wrk or the network in the way (PostgreSQL and Redis still are).

Both calls are answered by the fast route (accounts.http.fastroute); `--django` sends the same requests through
Django's view instead (an `Idempotency-Key` header, new per request, hands them over), for comparison.

    python bench/fastroute_inprocess.py [--calls 3000] [--rounds 3] [--database herald_bench_fast] [--django]

Under callgrind, the CPU instructions of the measured calls alone (what a busy machine does not change; compare
two versions of the code by this count per call):

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/fast.cg \
        python bench/fastroute_inprocess.py --calls 300 --rounds 1 --callgrind
    callgrind_annotate /tmp/fast.cg | grep 'PROGRAM TOTALS'    # both paths' calls: divide by 2 x calls

`--path /v1/send` measures one of the two alone (then divide by the calls).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import bench_env, fresh_database, setup_project, wsgi_environ


def run(application, path: str, key: str, payload, calls: int, django: bool, callgrind: bool = False):
    """(CPU microseconds of the calling thread, wall microseconds) per successful call. The thread's CPU leaves out
    the delivery hand-over thread and the database and Redis servers; it includes the client side of their
    round trips."""
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    if callgrind:
        subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True)
    cpu, wall = time.thread_time(), time.perf_counter()
    for n in range(calls):
        body = json.dumps(payload(n)).encode()
        extra = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())} if django else {}
        b"".join(
            application(
                wsgi_environ("POST", path, {"HTTP_AUTHORIZATION": f"Bearer {key}", **extra}, body), start_response
            )
        )
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    if callgrind:
        subprocess.run(["callgrind_control", "--instr=off", str(os.getpid())], check=True, capture_output=True)
    assert set(statuses) == {"200 OK"}, set(statuses)
    return cpu / calls * 1e6, wall / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database", default="herald_bench_fast")
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--django", action="store_true", help="through the Django view instead")
    parser.add_argument("--callgrind", action="store_true", help="instrument only the measured calls")
    parser.add_argument("--path", choices=["/v1/track", "/v1/send"], help="measure this call alone")
    args = parser.parse_args()

    fresh_database(args.database)
    env = bench_env(args.database, API_RATE_LIMIT_PER_MINUTE="100000000")
    redis = env["CACHE_URL"].rsplit("/", 1)[0]
    env.update(CACHE_URL=f"{redis}/{args.redis_db}", CELERY_BROKER_URL=f"{redis}/{args.redis_db + 1}")
    keys = setup_project(env)
    os.environ.update(env)
    from config.wsgi import application

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
        run(application, path, key, payload, 200, args.django)  # warm-up: caches, prepared statements
    for _ in range(args.rounds):
        for path, (key, payload) in cases.items():
            results[path].append(run(application, path, key, payload, args.calls, args.django, args.callgrind))
    for path, rounds in results.items():
        cpu = statistics.median(r[0] for r in rounds)
        wall = statistics.median(r[1] for r in rounds)
        print(f"{path}: {cpu:.0f} us CPU, {wall:.0f} us wall per call (median of {args.rounds} x {args.calls})")
    from django.core.cache import caches

    caches["default"].clear()


if __name__ == "__main__":
    main()
