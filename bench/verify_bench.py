"""POST /v1/verify throughput with a warm DNS cache.

Starts a DNS server on loopback (the test one, answering MX and A for the benchmark domains), gunicorn on
PostgreSQL and Redis (cache, so DNS answers are shared by the workers as in production), and drives
`POST /v1/verify` with wrk: every request has a new local part on one of a few domains, so the syntax check and
flags run each time while DNS is answered from the cache after the warm-up. The rate limit stays on (raised).
Each run is followed by one against the floor (a malformed address: authentication, rate limit and DRF only).

    python bench/verify_bench.py [--seconds 12] [--workers 2] [--threads 4] [--connections 50] [--runs 3]

Threaded workers (gthread) keep connections alive; sync workers open a TCP connection per request.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serve import REDIS, bench_env, fresh_database, gunicorn, machine, setup_project, wrk, wrk_medians

from domains.tests.dnsserver import DnsServer

DOMAINS = ["acme-bench.com", "gmail.com", "mailinator.com", "gmial.com"]

BODY_LUA = """
local domains = {%s}
"""
REQUEST_LUA = """
request = function()
  counter = counter + 1
  local domain = domains[(counter % #domains) + 1]
  local body = '{"email":"user' .. counter .. '+tag@' .. domain .. '"}'
  return wrk.format(nil, nil, nil, body)
end
"""
# The floor: the same endpoint with a malformed address, answered after the syntax check alone. What separates the
# two is the cost of the flags and the (cached) DNS; the floor itself is authentication, rate limit and DRF.
FLOOR_LUA = """
request = function()
  return wrk.format(nil, nil, nil, '{"email":"not-an-address"}')
end
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=18200)
    parser.add_argument("--dns-port", type=int, default=18253)
    args = parser.parse_args()

    dns_server = DnsServer(port=args.dns_port)
    for domain in DOMAINS:
        dns_server.zone[(domain, "MX")] = [f"10 mx.{domain}."]
        dns_server.zone[(domain, "A")] = ["192.0.2.1"]
    fresh_database("herald_bench_verify")
    # A Redis database of its own, emptied first, so the warm-up really fills the DNS cache.
    cache_url = f"{REDIS}/12"
    subprocess.run(["redis-cli", "-u", cache_url, "flushdb"], check=True, capture_output=True)
    env = bench_env(
        "herald_bench_verify",
        CACHE_URL=cache_url,
        API_RATE_LIMIT_PER_MINUTE="100000000",
        DNS_NAMESERVERS=dns_server.address,
        DNS_CACHE_SECONDS="3600",
    )
    project = setup_project(env)
    body_lua = BODY_LUA % ", ".join(f'"{d}"' for d in DOMAINS)
    runs, floor_runs = [], []
    try:
        with gunicorn(env, port=args.port, workers=args.workers, threads=args.threads) as base:
            url = base + "/v1/verify"
            common = dict(key=project["secretKey"], method="POST", body_lua=body_lua, request_lua=REQUEST_LUA)
            floor = dict(common, request_lua=FLOOR_LUA)
            wrk(url, connections=args.connections, seconds=3, **common)  # warm-up: fills the DNS cache
            queries_after_warmup = len(dns_server.queries)
            for _ in range(args.runs):
                # Interleaved, so that both see the same machine: this box is shared and noisy.
                runs.append(wrk(url, connections=args.connections, seconds=args.seconds, **common))
                floor_runs.append(wrk(url, connections=args.connections, seconds=args.seconds, **floor))
            dns_queries_during_runs = len(dns_server.queries) - queries_after_warmup
    finally:
        dns_server.stop()
    summary = {
        "benchmark": "verify",
        "path": "POST /v1/verify",
        "connections": args.connections,
        "gunicorn": f"{args.workers} workers x {args.threads} threads",
        "machine": machine(),
        "dns_queries_during_warmup": queries_after_warmup,
        "dns_queries_during_runs": dns_queries_during_runs,
        **wrk_medians(runs),
        "floor_median_requests_per_second": statistics.median(run["requests_per_second"] for run in floor_runs),
        "ratio_to_floor_per_run": [
            round(run["requests_per_second"] / floor["requests_per_second"], 2)
            for run, floor in zip(runs, floor_runs, strict=True)
        ],
        "runs": runs,
        "floor_runs": floor_runs,
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
