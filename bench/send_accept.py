"""POST /v1/send acceptance: gunicorn on PostgreSQL and Redis (broker and cache), 50 connections, each request
one new recipient with data and a rendered template. Delivery is excluded (no worker runs; the ids wait in the
Redis delivery queue), so the figure is what the API accepts: validation, contact upsert, rendering, the email row,
the hand-over. At the end it checks that every stored email is waiting for delivery exactly once.

    python bench/send_accept.py [--seconds 20] [--workers 2 --threads 4] [--worker-connections 25] [--runs 3]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import bench_env, fresh_database, gunicorn, machine, setup_project, wrk, wrk_medians


def psql(env: dict, sql: str) -> str:
    return subprocess.run(
        ["psql", env["DATABASE_URL"], "-Atc", sql], check=True, capture_output=True, text=True
    ).stdout.strip()


BODY_LUA = """
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
"""
REQUEST_LUA = """
request = function()
  counter = counter + 1
  local body = string.format('{"to":{"name":"Reader %d","email":"r%d-%d@example.test"},'
    .. '"from":{"name":"Bench","email":"news@bench.test"},'
    .. '"subject":"Hello {{ name }}","body":"<p>Hi {{ name }}, your plan is {{ plan }}.</p>",'
    .. '"data":{"plan":"pro","seats":5}}', counter, math.random(1, 1000000000), counter)
  return wrk.format(nil, nil, nil, body)
end
"""


def send_options(key: str, connections: int) -> dict:
    """wrk's options for `/v1/send` requests of one new recipient each (bench/smtp_bench.py sends the same)."""
    return dict(key=key, connections=connections, method="POST", body_lua=BODY_LUA, request_lua=REQUEST_LUA)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="> 1: gthread workers (keep-alive), as `make run`")
    parser.add_argument(
        "--worker-connections", type=int, default=0, help="gunicorn's cap of connections per worker (0: its default)"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=18002)
    args = parser.parse_args()

    fresh_database("herald_bench_send")
    env = bench_env("herald_bench_send", API_RATE_LIMIT_PER_MINUTE="100000000")
    cache = redis.Redis.from_url(env["CACHE_URL"])
    cache.flushdb()  # the delivery queue starts empty, so that it can be checked against the stored rows
    project = setup_project(env)
    runs = []
    with gunicorn(
        env, port=args.port, workers=args.workers, threads=args.threads, worker_connections=args.worker_connections
    ) as base:
        options = send_options(project["secretKey"], args.connections)
        wrk(f"{base}/v1/send", seconds=3, **options)  # warm-up
        for _ in range(args.runs):
            runs.append(wrk(f"{base}/v1/send", seconds=args.seconds, **options))
    # gunicorn has stopped (its workers hand over what they held as they exit): every accepted email must be
    # waiting for delivery, once.
    stored = int(psql(env, "SELECT count(*) FROM messaging_email"))
    waiting = [raw.decode() for raw in cache.lrange(":1:delivery:waiting", 0, -1)]
    print(
        json.dumps(
            {
                "benchmark": "send_accept",
                "connections": args.connections,
                "gunicorn": f"{args.workers} workers x {args.threads} threads",
                "machine": machine(),
                **wrk_medians(runs),
                "runs": runs,
                "emails_stored": stored,
                "emails_waiting_for_delivery": len(waiting),
                "emails_waiting_twice": len(waiting) - len(set(waiting)),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
