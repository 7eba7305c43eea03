"""Contacts and events benchmarks, under gunicorn with PostgreSQL and Redis (the issue's "Done when").

    python bench/contacts_bench.py track  [--seconds 20] [--workers 2 --threads 4] [--runs 3]   # POST /v1/track, 50 connections
    python bench/contacts_bench.py import [--rows 50000]                            # 5 MB CSV, end to end
    python bench/contacts_bench.py search [--contacts 1000000] [--requests 300]     # GET /contacts?search= at 1M

Each run uses its own database (`herald_bench_contacts_*`), Redis databases 12 (cache) and 13 (broker), and ports
18100-18199. Results are printed as JSON.
"""

import argparse
import io
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve import BIN, PG, REDIS, ROOT, bench_env, fresh_database, gunicorn, machine, setup_project, wrk, wrk_medians

sys.path.insert(0, str(ROOT))
from config.queues import QUEUES

TRACK_LUA = """
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  local n = math.random(1, USERS)
  local body = '{"email":"user' .. n .. '@bench.test","event":"page_view","data":{"plan":"pro","path":"/p/' .. n .. '"}}'
  return wrk.format(nil, nil, nil, body)
end
"""


def _env(database: str) -> dict:
    return bench_env(
        database,
        API_RATE_LIMIT_PER_MINUTE="100000000",
        CACHE_URL=f"{REDIS}/12",
        CELERY_BROKER_URL=f"{REDIS}/13",
    )


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1)]


def bench_track(args) -> dict:
    database = "herald_bench_contacts_track"
    fresh_database(database)
    env = _env(database)
    project = setup_project(env)
    url_path = "/v1/track"
    runs = []
    lua = TRACK_LUA.replace("USERS", str(args.users))
    with gunicorn(env, port=args.port, workers=args.workers, threads=args.threads) as base:
        wrk(
            base + url_path,
            key=project["publicKey"],
            connections=args.connections,
            seconds=5,
            method="POST",
            request_lua=lua,
        )  # warm-up, also creates most contacts
        for _ in range(args.runs):
            runs.append(
                wrk(
                    base + url_path,
                    key=project["publicKey"],
                    connections=args.connections,
                    seconds=args.seconds,
                    method="POST",
                    request_lua=lua,
                )
            )
    return {
        "benchmark": "contacts_track",
        "path": f"POST /v1/track (random contact of {args.users:,}, 2 data keys; warm-up creates most of them)",
        "connections": args.connections,
        "gunicorn": f"{args.workers} workers x {args.threads} threads",
        "machine": machine(),
        **wrk_medians(runs),
        "runs": runs,
    }


def make_csv(rows: int, target_bytes: int) -> bytes:
    """`rows` contacts with 6 data columns, padded with a note column to about `target_bytes`."""
    header = "email,subscribed,First Name,Last Name,Company,Plan,Zip,Score\n"
    lines = [
        f"person{i}@import.test,{'yes' if i % 7 else 'no'},First{i},Last{i},Company {i % 977},"
        f"{('free', 'pro', 'team')[i % 3]},{i % 100000:05d},{i % 1000 / 10}\n"
        for i in range(rows)
    ]
    body = header + "".join(lines)
    pad = max(0, (target_bytes - len(body.encode())) // rows)
    if pad:
        # Widen the Company column so that the file is the size an integrator would upload.
        lines = [line.replace(",Company ", ",Company " + "x" * pad + " ", 1) for line in lines]
        body = header + "".join(lines)
    return body.encode()[:target_bytes].rsplit(b"\n", 1)[0] + b"\n"


def bench_import(args) -> dict:
    database = "herald_bench_contacts_import"
    fresh_database(database)
    env = _env(database)
    subprocess.run(["redis-cli", "-u", f"{REDIS}/13", "flushdb"], check=True, capture_output=True)
    project = setup_project(env)
    content = make_csv(args.rows, 5 * 1024 * 1024 - 1024)
    worker = subprocess.Popen(
        [str(BIN / "celery"), "-A", "config", "worker", "-P", "solo", "-l", "warning", "-Q", ",".join(QUEUES)],
        cwd=ROOT,
        env=env,
    )
    headers = {"Authorization": f"Bearer {project['secretKey']}"}
    try:
        with gunicorn(env, port=args.port, workers=2) as base:
            time.sleep(3)  # let the worker connect
            runs = [_import_once(base, headers, content, "new contacts")]
            if args.twice:
                # The same people again with another plan: every row is an update of an existing contact.
                runs.append(_import_once(base, headers, content.replace(b",pro,", b",PRO,"), "re-import"))
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    return {
        "benchmark": "contacts_import",
        "file_bytes": len(content),
        "data_columns": 6,
        "machine": machine(),
        "runs": runs,
    }


def _import_once(base: str, headers: dict, content: bytes, label: str) -> dict:
    started = time.perf_counter()
    response = httpx.post(
        f"{base}/contacts/import",
        headers=headers,
        files={"file": ("c.csv", io.BytesIO(content), "text/csv")},
        timeout=60,
    )
    accepted = time.perf_counter() - started
    assert response.status_code == 202, response.text
    job_id = response.json()["jobId"]
    while True:
        job = httpx.get(f"{base}/contacts/import/{job_id}", headers=headers, timeout=10).json()
        if job["status"] in ("COMPLETED", "FAILED"):
            break
        time.sleep(0.1)
    return {
        "label": label,
        "status": job["status"],
        "result": {k: v for k, v in job["result"].items() if k != "errors"},
        "upload_accepted_seconds": round(accepted, 3),
        "end_to_end_seconds": round(time.perf_counter() - started, 2),
    }


SEED_SQL = """
INSERT INTO contacts_contact (id, project_id, email, subscribed, data, created_at, updated_at)
SELECT gen_random_uuid(), %(project)s::uuid,
       (ARRAY['anna','ben','carla','dmitri','emma','farid','grace','hugo','ines','jonas'])[1 + g %% 10]
         || '.' || (ARRAY['smith','garcia','müller','rossi','dubois','kowalski','silva','nguyen'])[1 + (g / 10) %% 8]
         || g || '@' || (ARRAY['gmail.com','outlook.com','acme.io','example.org','mail.test'])[1 + g %% 5],
       g %% 10 <> 0,
       jsonb_build_object('plan', (ARRAY['free','pro','team'])[1 + g %% 3], 'n', g),
       now() - make_interval(secs => g), now()
FROM generate_series(1, %(count)s) AS g
"""


def bench_search(args) -> dict:
    database = "herald_bench_contacts"
    env = _env(database)
    dsn = f"{PG}/{database}"
    if args.reseed:
        fresh_database(database)
        project = setup_project(env)
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            started = time.perf_counter()
            conn.execute(SEED_SQL, {"project": project["id"], "count": args.contacts}, prepare=False)
            conn.execute("VACUUM ANALYZE contacts_contact")
            seeded = time.perf_counter() - started
        Path("/tmp/herald_bench_contacts.json").write_text(json.dumps(project))
    else:
        project, seeded = json.loads(Path("/tmp/herald_bench_contacts.json").read_text()), None
    headers = {"Authorization": f"Bearer {project['secretKey']}"}
    rng = random.Random(7)
    cases = {
        # What a person types into the dashboard search box: a name and a few digits, a whole address, a domain.
        "selective": lambda: (
            f"{rng.choice(['anna', 'hugo', 'emma'])}.{rng.choice(['smith', 'rossi'])}{rng.randint(1, 99)}"
        ),
        "exact_email": lambda: f"ines.silva{rng.randint(1, 99999)}8@",
        "no_match": lambda: f"zz{rng.randint(1, 10**6)}",
        "broad_domain": lambda: rng.choice(["acme.io", "gmail.com"]),
        "no_search": lambda: "",
    }
    results = {}
    with gunicorn(env, port=args.port, workers=2) as base, httpx.Client(base_url=base, headers=headers) as client:
        for name, term in cases.items():
            timings, totals = [], []
            for _ in range(args.requests if name != "broad_domain" else max(20, args.requests // 10)):
                query = {"limit": 20, **({"search": term()} if name != "no_search" else {})}
                started = time.perf_counter()
                response = client.get("/contacts", params=query, timeout=30)
                timings.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, response.text
                totals.append(response.json()["total"])
            timings = timings[3:]  # first requests warm the connection and the worker
            results[name] = {
                "requests": len(timings),
                "p50_ms": round(_percentile(timings, 50), 1),
                "p95_ms": round(_percentile(timings, 95), 1),
                "p99_ms": round(_percentile(timings, 99), 1),
                "median_total": statistics.median(totals),
            }
    return {
        "benchmark": "contacts_search",
        "contacts": args.contacts,
        "seed_seconds": round(seeded, 1) if seeded else None,
        "client": "1 connection, sequential requests, limit=20",
        "gunicorn": "2 workers",
        "machine": machine(),
        "cases": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("which", choices=["track", "import", "search"])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="> 1: gthread workers (keep-alive), as `make run`")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=50000)
    parser.add_argument("--users", type=int, default=10000, help="track: distinct contacts the events spread over")
    parser.add_argument("--contacts", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--twice", action="store_true", help="import: import the file again as updates")
    parser.add_argument("--no-reseed", dest="reseed", action="store_false")
    parser.add_argument("--port", type=int, default=18110)
    args = parser.parse_args()
    result = {"track": bench_track, "import": bench_import, "search": bench_search}[args.which](args)
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
