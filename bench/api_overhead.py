"""API overhead: authentication + rate limit + envelope on a trivial authenticated endpoint.

Runs gunicorn on PostgreSQL and Redis (cache and broker) and drives `GET <path>` with wrk at 50 connections.
The rate limit stays on (it is part of the overhead) but is raised so that it does not answer 429s.

`--probe` serves the test suite's probe routes (config/tests/probe_urls.py) next to the real ones and measures
`GET /probe/secret`, an authenticated endpoint that does no work of its own: the overhead alone.

    python bench/api_overhead.py [--path /contacts?limit=1] [--seconds 20] [--workers 4] [--runs 3]
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import bench_env, fresh_database, gunicorn, machine, setup_project, wrk, wrk_medians


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", default="/contacts?limit=1")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=18001)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args()
    if args.probe:
        args.path = "/probe/secret"

    fresh_database("herald_bench_api")
    env = bench_env("herald_bench_api", API_RATE_LIMIT_PER_MINUTE="100000000")
    if args.probe:
        env["DJANGO_SETTINGS_MODULE"] = "bench.probe_settings"
    project = setup_project(env)
    runs = []
    with gunicorn(env, port=args.port, workers=args.workers, threads=args.threads) as base:
        wrk(base + args.path, key=project["secretKey"], connections=args.connections, seconds=3)  # warm-up
        for _ in range(args.runs):
            runs.append(
                wrk(base + args.path, key=project["secretKey"], connections=args.connections, seconds=args.seconds)
            )
    summary = {
        "benchmark": "api_overhead",
        "path": args.path,
        "connections": args.connections,
        "gunicorn": f"{args.workers} workers x {args.threads} threads",
        "machine": machine(),
        **wrk_medians(runs),
        "runs": runs,
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
