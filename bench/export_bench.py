"""`export_contacts` at scale on PostgreSQL: peak memory (RSS) of the command at two audience sizes, to show that it
streams (the same peak at 10 times the contacts) rather than loading the audience.

Seeds one project per size with the contacts of bench/seed.py (about eight data keys each), then runs the real
command in a fresh process per size, writing the CSV to a file, and reads that process's own peak RSS
(getrusage). A project with no contact gives the baseline: Django, the apps and a database connection loaded.

    python bench/export_bench.py                          # 100,000 and 1,000,000 contacts (seeding takes minutes)
    python bench/export_bench.py --sizes 20000 100000     # a quick check
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.seed import seed_command
from bench.serve import PYTHON, ROOT, bench_env, fresh_database, machine, manage

# Runs manage.py in this process and reports its peak RSS on the last line of stderr, whatever the exit.
CHILD = """
import json, resource, runpy, sys, time
sys.argv = ["manage.py", *sys.argv[1:]]
started = time.perf_counter()
try:
    runpy.run_path("manage.py", run_name="__main__")
finally:
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_rss_mb": round(peak_kb / 1024, 1), "seconds": round(time.perf_counter() - started, 2)}),
          file=sys.stderr)
"""


def project(env: dict, name: str) -> str:
    out = manage(env, "create_project", "--name", name, "--owner-email", "bench@bench.test", "--json")
    return json.loads(out)["id"]


def seed(database: str, project_id: str, count: int) -> float:
    return seed_command(database, project=project_id, contacts=count, events=0, emails=0)["seconds"]


def export(env: dict, project_id: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".csv") as output:
        done = subprocess.run(
            [PYTHON, "-c", CHILD, "export_contacts", "--project", project_id, "--output", output.name],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        with open(output.name, "rb") as written:
            lines = sum(1 for _ in written)
        figures = json.loads(done.stderr.strip().splitlines()[-1])
        return {**figures, "rows": lines - 1, "bytes": os.path.getsize(output.name)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--database", default="herald_bench_export")
    args = parser.parse_args()
    # The export needs only the database: local-memory cache and a filesystem broker keep Redis out of it.
    env = bench_env(args.database, CACHE_URL="locmemcache://bench", CELERY_BROKER_URL="filesystem://")
    fresh_database(args.database)
    manage(env, "migrate", "--no-input", "-v", "0")
    results = {"machine": machine(), "load_before": os.getloadavg()[0]}
    baseline = project(env, "Empty")
    results["baseline"] = export(env, baseline)
    for size in args.sizes:
        project_id = project(env, f"Export {size}")
        seeded = seed(args.database, project_id, size)
        export(env, project_id)  # warm the table's pages, so both sizes are read from memory alike
        results[str(size)] = {"seed_seconds": seeded, **export(env, project_id)}
        print(json.dumps({size: results[str(size)]}), flush=True)
    results["load_after"] = os.getloadavg()[0]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
