"""`make run` in a copy of a checkout of its own (its own `var/`: database, broker folder, credentials), on the
embedded defaults, for the tests (config/tests/test_make_run.py) and the stop benchmark (bench/make_run_stop.py)."""

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import httpx

from config.tests.processes import BIN, ROOT, children, free_port

# What a newcomer should never see when stopping `make run`.
ALARMING = ("SIGKILL", "SIGQUIT", "Segmentation fault", "Traceback", "make: ***", "Perhaps out of memory")


def checkout_copy(target: Path, source_tree: Path = ROOT) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=source_tree, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = source_tree / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)  # mtimes kept: make sees the virtualenv as installed


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def make_run(checkout: Path, source_tree: Path = ROOT, **settings: str) -> tuple[subprocess.Popen, Path]:
    """`make run` started in `checkout`, a copy of `source_tree`'s tracked files, in a session of its own (a
    terminal's foreground job); its output goes to the returned log file."""
    checkout_copy(checkout, source_tree)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL", "EMAIL_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        PORT=str(free_port()),
        VENV=str(BIN.parent),
        SMTP_SUBMISSION_LISTEN=f"127.0.0.1:{free_port()}",
        SMTP_INBOUND_LISTEN=f"127.0.0.1:{free_port()}",
    )
    env.update(settings)
    log = checkout / "make-run.log"
    with open(log, "w") as output:
        make = subprocess.Popen(
            ["make", "run"], cwd=checkout, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return make, log


def alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if os.path.exists(f"/proc/{pid}") and "Z" not in state(pid)]


def kill_all(make: subprocess.Popen) -> None:
    """What a failed test leaves running: make's group and every process group below it."""
    for pid in [make.pid, *descendants(make.pid)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def command_line(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline") as handle:
        return handle.read().replace("\0", " ")


def state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "Z"
