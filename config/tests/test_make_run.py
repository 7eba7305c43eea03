"""`make run` as a newcomer uses it, in a copy of the checkout of its own (its own `var/`: database, broker folder,
credentials): it starts on the embedded defaults and answers, and Ctrl-C (SIGINT to the terminal's foreground process
group) stops every process it started, quickly and without alarming output."""

import os
import shutil
import signal
import subprocess
import time

import httpx
import pytest

from config.tests.processes import BIN, ROOT, children, free_port, wait_until

pytestmark = pytest.mark.integration

# Measured on a two-core machine: 2.3 to 3.6 s on PostgreSQL and Redis; 6 to 8 s on these embedded defaults, where
# a Celery worker on the filesystem broker notices the signal only after its current two-second poll, then closes its
# pool. CI runs two suites at once, hence the margin: the bound guards against a stop that waits for a timeout.
STOP_SECONDS = 15
ALARMING = ("SIGKILL", "SIGQUIT", "Segmentation fault", "Traceback", "make: ***", "Perhaps out of memory")


def _checkout_copy(target) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)  # mtimes kept: make sees the virtualenv as installed


def _descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *_descendants(child)]
    return found


def test_ctrl_c_stops_every_process_of_make_run_within_seconds(tmp_path):
    _checkout_copy(tmp_path)
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL", "EMAIL_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        PORT=str(port),
        VENV=str(BIN.parent),
        SMTP_SUBMISSION_LISTEN=f"127.0.0.1:{free_port()}",
        SMTP_INBOUND_LISTEN=f"127.0.0.1:{free_port()}",
    )
    log = tmp_path / "make-run.log"
    with open(log, "w") as output:
        make = subprocess.Popen(
            ["make", "run"], cwd=tmp_path, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_until(lambda: _answers(port), timeout=180, what="make run to answer /health")
        wait_until(lambda: "ready." in log.read_text(), timeout=60, what="the Celery workers to be ready")
        started = _descendants(make.pid)
        assert len(started) >= 5, started

        pressed = time.monotonic()
        os.killpg(make.pid, signal.SIGINT)
        make.wait(timeout=60)
        took = time.monotonic() - pressed
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)

    left = [pid for pid in started if os.path.exists(f"/proc/{pid}") and "Z" not in _state(pid)]
    assert left == [], f"still running after make ended: {left}"
    assert took < STOP_SECONDS, f"stopped in {took:.1f} s"
    said = log.read_text()
    assert [word for word in ALARMING if word in said] == [], said[-3000:]
    assert "Shutting down: Master" in said and "Warm shutdown" in said and "SMTP server stopped" in said


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "Z"
