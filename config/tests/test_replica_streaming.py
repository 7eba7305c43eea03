"""Herald served against a primary and a real streaming replica (two PostgreSQL clusters of the test's own, the
replica made by pg_basebackup and replaying three seconds behind): a member page and analytics read the replica and
show the old figures until it has replayed the write, while the write's answer and the primary's reads show it at
once; with the replica stopped, the same reads answer from the primary and the fallback is logged."""

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from config.tests.processes import BIN, ROOT, database_url, gunicorn_server, process_env, wait_until

pytestmark = pytest.mark.integration

APPLY_DELAY_SECONDS = 3
PORTS = range(55432, 55440)


def _server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _free_ports(count: int) -> list[int]:
    free = []
    for port in PORTS:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                free.append(port)
        if len(free) == count:
            return free
    pytest.skip(f"needs {count} free ports in {PORTS.start}-{PORTS.stop - 1}")


def _as_server_user(command: list) -> list[str]:
    # initdb and postgres refuse to run as root: as root (CI), run them as the machine's PostgreSQL user.
    command = [str(part) for part in command]
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _run(command: list, **kwargs) -> None:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=60, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed: {done.stderr}"


class Cluster:
    def __init__(self, bin_dir: Path, data: Path, port: int):
        self.bin_dir, self.data, self.port = bin_dir, data, port

    def url(self, name: str = "herald") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def configure(self, **values) -> None:
        lines = [f"{key} = '{value}'" for key, value in values.items()]
        with open(self.data / "postgresql.auto.conf", "a") as conf:
            conf.write("\n".join(lines) + "\n")

    def start(self) -> None:
        log = self.data.parent / f"{self.data.name}.log"
        _run(_as_server_user([self.bin_dir / "pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "30", "start"]))

    def stop(self) -> None:
        subprocess.run(
            _as_server_user([self.bin_dir / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            timeout=60,
        )

    def psql(self, sql: str, name: str = "herald") -> str:
        out = subprocess.run(
            [self.bin_dir / "psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", self.url(name), "-c", sql],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout.strip()


# Fast throwaway clusters: nothing is kept after the test.
FAST = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "16MB",
    "max_connections": "40",
}


@pytest.fixture(scope="module")
def served(django_db_setup):
    """A primary with the test database's schema, its streaming replica and a gunicorn on both; yields a client of
    the server with a project's secret key, the replica cluster and the server's log file."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("a streaming replica is PostgreSQL's: run with DATABASE_URL=postgres://...")
    bin_dir = _server_bin()
    if bin_dir is None:
        pytest.skip("needs the PostgreSQL server binaries (/usr/lib/postgresql/*/bin)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("needs runuser to start PostgreSQL as the postgres user")
    primary_port, replica_port = _free_ports(2)
    folder = Path(tempfile.mkdtemp(prefix="herald-replica-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    primary = Cluster(bin_dir, folder / "primary", primary_port)
    replica = Cluster(bin_dir, folder / "replica", replica_port)
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        _run(_as_server_user([bin_dir / "initdb", "-D", primary.data, "-U", "postgres", "--auth=trust", "-N"]))
        primary.configure(**FAST, port=primary_port, unix_socket_directories=folder)
        stack.callback(primary.stop)
        primary.start()
        primary.psql("CREATE DATABASE herald", name="postgres")
        # The schema the suite migrated, copied: as `migrate` would make it, in a fraction of its time.
        schema = folder / "schema.sql"
        _run([bin_dir / "pg_dump", "--no-owner", "--no-privileges", "-f", schema, database_url()])
        _run([bin_dir / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", primary.url(), "-f", schema])

        backup = f"-h 127.0.0.1 -p {primary_port} -U postgres -D {replica.data} -R -X stream --checkpoint=fast"
        _run(_as_server_user([bin_dir / "pg_basebackup", *backup.split()]))
        replica.configure(port=replica_port, recovery_min_apply_delay=f"{APPLY_DELAY_SECONDS}s")
        stack.callback(replica.stop)
        replica.start()

        env = process_env(DATABASE_URL=primary.url(), DATABASE_REPLICA_URL=replica.url())
        create = "manage.py create_project --name Shop --owner-email ops@shop.test --json"
        made = subprocess.run(
            [BIN / "python", *create.split()],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        key = json.loads(made.stdout)["secretKey"]
        log = stack.enter_context(open(folder / "gunicorn.log", "w+"))
        base = stack.enter_context(
            gunicorn_server(stderr=log, DATABASE_URL=primary.url(), DATABASE_REPLICA_URL=replica.url())
        )
        client = stack.enter_context(
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=10)
        )
        yield {"client": client, "replica": replica, "log": folder / "gunicorn.log"}


def _total(client: httpx.Client, segment_id: str) -> int:
    response = client.get(f"/segments/{segment_id}/contacts", params={"pageSize": 100})
    assert response.status_code == 200, response.text
    return response.json()["total"]


def _events(client: httpx.Client, name: str) -> int:
    response = client.get("/analytics/top-events", params={"days": 1})
    assert response.status_code == 200, response.text
    return {row["name"]: row["count"] for row in response.json()}.get(name, 0)


def test_the_scoped_reads_come_from_the_replica_and_lag_behind_the_write(served):
    client = served["client"]
    segment = client.post("/segments", json={"name": "VIP", "type": "STATIC"}).json()
    written_at = time.monotonic()
    added = client.post(f"/segments/{segment['id']}/members", json={"emails": ["ann@shop.test"], "createMissing": True})
    tracked = client.post("/events/track", json={"email": "ann@shop.test", "event": "signup"})
    # The writes' answers, and the reads outside the scope, are the primary's: they show the write at once.
    assert added.json() == {"added": 1, "created": 1, "notFound": []}
    assert tracked.status_code == 200, tracked.text
    assert client.get(f"/segments/{segment['id']}").json()["memberCount"] == 1
    assert [contact["email"] for contact in client.get("/contacts").json()["data"]] == ["ann@shop.test"]
    # The member page and analytics are the replica's, which replays the writes seconds later.
    assert (_total(client, segment["id"]), _events(client, "signup")) == (0, 0)
    assert time.monotonic() - written_at < APPLY_DELAY_SECONDS
    wait_until(
        lambda: _total(client, segment["id"]) == 1 and _events(client, "signup") == 1, timeout=15, what="the replay"
    )
    assert time.monotonic() - written_at >= APPLY_DELAY_SECONDS - 0.5


def test_with_the_replica_down_the_scoped_reads_answer_from_the_primary_and_say_so(served):
    client = served["client"]
    segment = client.post("/segments", json={"name": "Later", "type": "STATIC"}).json()
    served["replica"].stop()
    added = client.post(f"/segments/{segment['id']}/members", json={"emails": ["bob@shop.test"], "createMissing": True})
    tracked = client.post("/events/track", json={"email": "bob@shop.test", "event": "upgrade"})
    assert added.json()["added"] == 1 and tracked.status_code == 200
    # At once, and complete: the primary answers.
    assert (_total(client, segment["id"]), _events(client, "upgrade")) == (1, 1)
    log = wait_until(
        lambda: (
            "Read replica unreachable, reading from the primary" in served["log"].read_text()
            and served["log"].read_text()
        ),
        timeout=5,
        what="the fallback's log line",
    )
    assert log.count("Read replica unreachable") == 1
