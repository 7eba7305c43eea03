"""Real processes for integration tests: a Celery worker, celery-beat and gunicorn servers on the test database,
and a Redis server of the test's own.

They run with the production settings module and see the data a `transactional_db` test commits.
"""

import os
import shlex
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import redis
from django.conf import settings
from django.db import connection

from config.queues import QUEUES

ROOT = Path(__file__).resolve().parents[2]  # not read from the settings: bench scripts import this before them
BIN = Path(sys.executable).parent


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"] or "") + (":" + quote(db["PASSWORD"]) if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def process_env(**overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        SECRET_KEY=settings.SECRET_KEY,
        DEBUG="false",
        LOG_LEVEL="WARNING",
    )
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        env["CELERY_BROKER_FOLDER"] = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
    env.update(overrides)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def celery_worker(concurrency: int = 2, pool: str = "prefork", stderr=None, queues=QUEUES, **env):
    """A worker on the test database, consuming every queue unless told `queues`; `pool="solo"` runs tasks in the
    worker process itself, so killing that one process kills the task where it stands. Its log goes to `stderr` (a
    file) when given."""
    options = ["--concurrency", str(concurrency), "--pool", pool, "--queues", ",".join(queues)]
    with worker_process(["celery", "-A", "config", "worker", *options], stderr=stderr, **env) as process:
        yield process


def unit_workers(host: str | None = None) -> list[list[str]]:
    """The Celery workers of the one-host default, each command as its deploy/systemd unit starts it (the host's name,
    this machine's unless given, in place of systemd's `%H`)."""
    starts = [
        shlex.split(line.removeprefix("ExecStart=").replace("%H", host or socket.gethostname()))
        for unit in sorted((ROOT / "deploy" / "systemd").glob("*.service"))
        for line in unit.read_text().splitlines()
        if line.startswith("ExecStart=")
    ]
    return [command for command in starts if command[1:4] == ["-A", "config", "worker"]]


@contextmanager
def worker_process(command: list[str], stderr=None, prefix: tuple[str, ...] = (), **env):
    """A Celery worker started with `command` (`celery -A config worker ...`, as a unit or the Makefile starts one)
    on the test database, logging warnings only, without the start-up exchanges with other workers; `prefix` runs it
    through another command that execs it (`ip netns exec <host>`), so that its process is still the worker."""
    quiet = ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    process = subprocess.Popen(
        [*prefix, str(BIN / "celery"), *command[1:], *quiet], cwd=ROOT, env=process_env(**env), stderr=stderr
    )
    try:
        yield process
    finally:
        _stop(process)


@contextmanager
def celery_beat(schedule: Path, stderr=None, prefix: tuple[str, ...] = (), **env):
    """A `celery -A config beat` as deploy/systemd/herald-beat.service starts it, on the test database and broker,
    with its own state file `schedule`; its log goes to `stderr` (a file) when given; `prefix` as `worker_process`."""
    command = [*prefix, str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO", "--schedule", str(schedule)]
    process = subprocess.Popen(command, cwd=ROOT, env=process_env(**env), stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        yield process
    finally:
        _stop(process)


@contextmanager
def gunicorn_server(
    workers: int = 1, stderr=None, prefix: tuple[str, ...] = (), host: str = "127.0.0.1", timeout: float = 30, **env
):
    """A gunicorn server on the test database (or the one `env` names), listening on `host`, once it answers (within
    `timeout` seconds); its log goes to `stderr` (a file) when given; `prefix` as `worker_process`."""
    port = free_port()
    command = [str(BIN / "gunicorn"), "-c", "config/gunicorn.py", "config.wsgi", "--bind", f"{host}:{port}"]
    process = subprocess.Popen(
        [*prefix, *command, "--workers", str(workers)],
        cwd=ROOT,
        env=process_env(**env),
        stderr=stderr,
    )
    base = f"http://{host}:{port}"
    try:
        wait_until(lambda: _responds(base), timeout=timeout, what=f"gunicorn on {base}")
        yield base
    finally:
        _stop(process)


class RedisServer:
    """A `redis-server` on a port of its own, without persistence: stopped (SIGKILL, as a crash) and started again
    it has lost everything, queued tasks and cached entries alike, as an unpersisted Redis that restarts has."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None):
        self.host, self.port = host, port or free_port()
        self.process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"

    def start(self) -> None:
        options = ["--port", str(self.port), "--bind", self.host, "--save", "", "--appendonly", "no"]
        if self.host != "127.0.0.1":  # bound to a private address of the caller's choosing (a bridge)
            options += ["--protected-mode", "no"]
        self.process = subprocess.Popen(["redis-server", *options], stdout=subprocess.DEVNULL)
        try:
            wait_until(self._answers, timeout=10, what=f"redis-server on {self.host}:{self.port}")
        except AssertionError:
            self.stop()
            raise

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()

    def _answers(self) -> bool:
        try:
            return redis.Redis(host=self.host, port=self.port, socket_connect_timeout=0.5).ping()
        except redis.RedisError:
            return False


def served_env(redis: RedisServer, sink) -> dict[str, str]:
    """The environment of processes on a test's own Redis (the cache in db 0, the broker in db 1) that deliver to the
    SMTP server `sink` and call webhook receivers on loopback."""
    return {
        "CACHE_URL": redis.url(0),
        "CELERY_BROKER_URL": redis.url(1),
        "EMAIL_URL": f"smtp://{sink.host}:{sink.port}",
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
    }


@contextmanager
def redis_server():
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


def children(pid: int) -> list[int]:
    """The child processes of `pid` (a Celery worker's pool, gunicorn's workers)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except FileNotFoundError:
        return []


def _responds(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(condition, *, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
