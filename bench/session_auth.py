"""The dashboard's session against the secret key on the same endpoint: `GET /contacts?limit=1` through the WSGI
application gunicorn serves, called in this process, once with `Authorization: Bearer sk_…` and once with the
session cookie and `X-Project-Id`, in alternating rounds (PostgreSQL and Redis as in production: the key cache
and the sessions' cache are on).

    python bench/session_auth.py [--calls 2000] [--rounds 5] [--database herald_bench_accounts] [--redis-db 11]

`--contacts N` gives the project N contacts first (three data keys each), so that `--path "/contacts?limit=100"`
measures a full page: what writing its rows costs against the rest of the request.

Under callgrind, the CPU instructions of one case's calls alone (what a busy machine does not change), once per case:

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/session.cg \
        python bench/session_auth.py --calls 300 --callgrind session
    callgrind_annotate /tmp/session.cg | grep 'PROGRAM TOTALS'    # divide by the calls
"""

import argparse
import os
import statistics
import sys
import time
from http.cookies import SimpleCookie
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import bench_env, callgrind, fresh_database, setup_project, wsgi_environ

PASSWORD = "bench passphrase, long enough"


def login(application, email: str) -> str:
    """The Cookie header of a session opened through POST /auth/login."""
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["status"], captured["headers"] = status, headers

    body = f'{{"email": "{email}", "password": "{PASSWORD}"}}'.encode()
    b"".join(application(wsgi_environ("POST", "/auth/login", {}, body), start_response))
    assert captured["status"] == "200 OK", captured
    cookies = SimpleCookie()
    for name, value in captured["headers"]:
        if name.lower() == "set-cookie":
            cookies.load(value)
    return "; ".join(f"{name}={morsel.value}" for name, morsel in cookies.items())


def run(application, path: str, headers: dict, calls: int) -> tuple[float, float]:
    """(CPU microseconds of this thread, wall microseconds) per call."""
    statuses = set()

    def start_response(status, response_headers, exc_info=None):
        statuses.add(status)

    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(calls):
        b"".join(application(wsgi_environ("GET", path, headers), start_response))
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    assert statuses == {"200 OK"}, statuses
    return cpu / calls * 1e6, wall / calls * 1e6


def set_password() -> tuple[str, str]:
    """Give the project's owner a password (create_project makes owners without one); (their email, project id)."""
    from accounts.models import Project, User

    owner = User.objects.get(email="bench@bench.test")
    owner.set_password(PASSWORD)
    owner.save()
    return owner.email, str(Project.objects.get().id)


def add_contacts(count: int) -> None:
    from accounts.models import Project
    from contacts.models import Contact

    project = Project.objects.get()
    Contact.objects.bulk_create(
        Contact(project=project, email=f"c{n}@bench.test", data={"plan": "pro", "seats": n, "company": f"Acme {n}"})
        for n in range(count)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", default="/contacts?limit=1")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--contacts", type=int, default=0, help="contacts to add to the project first")
    parser.add_argument("--database", default="herald_bench_accounts")
    parser.add_argument("--redis-db", type=int, default=11)
    parser.add_argument("--callgrind", choices=["key", "session"], help="instrument only this case's calls")
    args = parser.parse_args()

    fresh_database(args.database)
    env = bench_env(args.database, API_RATE_LIMIT_PER_MINUTE="100000000")
    redis = env["CACHE_URL"].rsplit("/", 1)[0]
    env.update(CACHE_URL=f"{redis}/{args.redis_db}", CELERY_BROKER_URL=f"{redis}/{args.redis_db}")
    keys = setup_project(env)
    os.environ.update(env)
    from config.wsgi import application

    owner_email, project_id = set_password()
    add_contacts(args.contacts)
    cases = {
        "key": {"HTTP_AUTHORIZATION": f"Bearer {keys['secretKey']}"},
        "session": {"HTTP_COOKIE": login(application, owner_email), "HTTP_X_PROJECT_ID": project_id},
    }
    results = {name: [] for name in cases}
    for headers in cases.values():
        run(application, args.path, headers, 200)  # warm-up: caches, prepared statements
    if args.callgrind:
        callgrind(True)
        run(application, args.path, cases[args.callgrind], args.calls)
        callgrind(False)
        print(f"{args.callgrind}: {args.calls} calls instrumented")
        return
    for _ in range(args.rounds):
        for name, headers in cases.items():
            results[name].append(run(application, args.path, headers, args.calls))
    medians = {
        name: (statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds))
        for name, rounds in results.items()
    }
    for name, (cpu, wall) in medians.items():
        print(
            f"{name}: {cpu:.0f} us CPU, {wall:.0f} us wall per GET {args.path} (median of {args.rounds} x {args.calls})"
        )
    print(
        f"session / key: {medians['session'][0] / medians['key'][0]:.2f}x CPU, "
        f"{medians['session'][1] / medians['key'][1]:.2f}x wall"
    )
    from django.core.cache import caches

    caches["default"].clear()


if __name__ == "__main__":
    main()
