"""Shared set-up for HTTP benchmarks: a fresh PostgreSQL database, a project, gunicorn, and a wrk run.

Used by the per-area scripts (`bench/api_overhead.py`, ...). Everything runs on this machine: wrk, gunicorn,
PostgreSQL and Redis share its cores, so figures are for the whole stack on one box.
"""

import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BIN = Path(PYTHON).parent
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
REDIS = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379")
# The Redis databases of the cache and the broker, and the name given to a script's PostgreSQL database: set them
# to run beside other benchmarks on the same servers.
CACHE_DB = os.environ.get("BENCH_CACHE_DB", "14")
BROKER_DB = os.environ.get("BENCH_BROKER_DB", "15")


def database_name(default: str) -> str:
    return os.environ.get("BENCH_DATABASE", default)


def bench_env(database: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        DATABASE_URL=f"{PG}/{database}",
        CACHE_URL=f"{REDIS}/{CACHE_DB}",
        CELERY_BROKER_URL=f"{REDIS}/{BROKER_DB}",
        DEBUG="false",
        LOG_LEVEL="WARNING",
        SECRET_KEY="bench-secret-key-not-for-production-0123456789",
        ALLOWED_HOSTS="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


def manage(env: dict, *args: str) -> str:
    return subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout


def fresh_database(name: str) -> None:
    for sql in (f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", f"CREATE DATABASE {name}"):
        subprocess.run(["psql", f"{PG}/postgres", "-qc", sql], check=True, capture_output=True)


def setup_project(env: dict) -> dict:
    manage(env, "migrate", "--no-input", "-v", "0")
    out = manage(
        env,
        "create_project",
        "--name",
        "Bench",
        "--owner-email",
        "bench@bench.test",
        "--verified-domain",
        "bench.test",
        "--json",
    )
    return json.loads(out)


@contextmanager
def gunicorn(env: dict, *, port: int, workers: int, threads: int = 1, worker_connections: int = 0):
    cmd = [
        str(BIN / "gunicorn"),
        "--config",
        "config/gunicorn.py",
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--log-level",
        "warning",
        *(["--worker-connections", str(worker_connections)] if worker_connections else []),
    ]
    process = subprocess.Popen(cmd, cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(f"{base}/config", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=20)


_LUA = """
wrk.method = "{method}"
wrk.headers["Authorization"] = "Bearer {key}"
wrk.headers["Content-Type"] = "application/json"
{body}
local counter = 0
{request}
"""


def wrk(
    url: str,
    *,
    key: str,
    connections: int,
    seconds: int,
    method: str = "GET",
    body_lua: str = "",
    request_lua: str = "",
    threads: int = 2,
) -> dict:
    """Run wrk and return requests/s, latency percentiles (ms) and non-2xx counts."""
    script = _LUA.format(method=method, key=key, body=body_lua, request=request_lua)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", handle.name, url],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    os.unlink(handle.name)
    return parse_wrk(out)


def _ms(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(\w+)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(out: str) -> dict:
    latency = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", out, re.M))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {
        "requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "p50_ms": _ms(latency["50"]),
        "p90_ms": _ms(latency["90"]),
        "p99_ms": _ms(latency["99"]),
        "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": errors.group(1) if errors else None,
    }


def wrk_medians(runs: list[dict]) -> dict:
    """The medians of several wrk runs: requests/s and the p50 and p99 latencies (ms)."""
    return {
        "median_requests_per_second": statistics.median(run["requests_per_second"] for run in runs),
        "median_p50_ms": statistics.median(run["p50_ms"] for run in runs),
        "median_p99_ms": statistics.median(run["p99_ms"] for run in runs),
    }


def machine() -> str:
    cpu = subprocess.run(
        ["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True
    ).stdout.strip()
    return f"{os.cpu_count()} cores, {cpu}"


def wsgi_environ(method: str, path: str, headers: dict, body: bytes = b"") -> dict:
    """A WSGI environ of one JSON request, for calling the application gunicorn serves in this process."""
    path, _, query = path.partition("?")
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "localhost",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        **headers,
    }


def callgrind(instrument: bool, *, dump: str | None = None) -> None:
    """Under `valgrind --tool=callgrind --instr-atstart=no`: count this process's instructions from now on, or stop
    counting; `dump` then writes what was counted since the last dump to a file of its own (`<out-file>.<n>`, its
    `totals:` line, labelled `dump <label>`), so that one process can measure several cases."""
    pid = str(os.getpid())
    subprocess.run(
        ["callgrind_control", f"--instr={'on' if instrument else 'off'}", pid], check=True, capture_output=True
    )
    if dump is not None:
        subprocess.run(["callgrind_control", f"--dump={dump}", pid], check=True, capture_output=True)


def backend_pid() -> int:
    """The process id of this thread's PostgreSQL backend (Django's connection)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def backend_cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) a PostgreSQL backend on this machine has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
