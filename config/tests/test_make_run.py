"""`make run` as a newcomer uses it, in a copy of the checkout of its own (its own `var/`: database, broker folder,
credentials): it starts on the embedded defaults and answers; Ctrl-C (SIGINT to the terminal's foreground process
group) or a SIGTERM to that group (`kill %1`, a closing IDE) stops every process it started, quickly and without
alarming output; and when one process cannot run, the others stop too instead of running on without it."""

import os
import signal
import socket
import time

import pytest

from config.tests.make_run import ALARMING, alive, answers, command_line, descendants, kill_all, make_run
from config.tests.processes import free_port, wait_until

pytestmark = pytest.mark.integration

# Measured on a quiet two-core machine: 2.5 to 3 s, most of it Celery's prefork pool closing its threads. CI runs two
# suites at once, hence the margin: the bound guards against a stop that waits for a poll or a timeout.
STOP_SECONDS = 10


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_to_make_run_stops_every_process_it_started_within_seconds(tmp_path, signal_number):
    port = free_port()
    make, log = make_run(tmp_path, PORT=str(port))
    try:
        wait_until(lambda: answers(port), timeout=180, what="make run to answer /health")
        wait_until(lambda: log.read_text().count("ready.") == 2, timeout=60, what="the Celery workers to be ready")
        started = descendants(make.pid)
        assert len(started) >= 6, started

        signalled = time.monotonic()
        os.killpg(make.pid, signal_number)
        make.wait(timeout=60)
        wait_until(lambda: not alive(started), timeout=60, what="every process to end")
        took = time.monotonic() - signalled
    finally:
        kill_all(make)

    assert took < STOP_SECONDS, f"stopped in {took:.1f} s"
    said = log.read_text()
    assert [word for word in ALARMING if word in said] == [], said[-3000:]
    stopped = ("Shutting down: Master", "Warm shutdown", "SMTP server stopped")
    assert [line for line in stopped if line not in said] == [], said[-3000:]


def test_when_one_process_ends_make_run_stops_the_others_and_says_which(tmp_path):
    port = free_port()
    make, log = make_run(tmp_path, PORT=str(port))
    try:
        wait_until(lambda: "SMTP inbound listening" in log.read_text(), timeout=180, what="the SMTP server to start")
        wait_until(lambda: log.read_text().count("ready.") == 2, timeout=60, what="the Celery workers to be ready")
        started = descendants(make.pid)
        smtp_server = next(pid for pid in started if "smtp_server" in command_line(pid))
        os.kill(smtp_server, signal.SIGKILL)
        make.wait(timeout=60)
        wait_until(lambda: not alive(started), timeout=60, what="every process to end")
    finally:
        kill_all(make)

    said = log.read_text()
    assert make.returncode != 0
    assert "smtp ended with exit code -9; stopping the others" in said, said[-3000:]
    assert "Warm shutdown" in said and "Shutting down: Master" in said


@pytest.mark.parametrize("taken", ["PORT", "SMTP_INBOUND_LISTEN"])
def test_an_address_in_use_is_named_with_the_fix_before_anything_starts(tmp_path, taken):
    with socket.create_server(("127.0.0.1", 0)) as other_program:
        host, port = other_program.getsockname()
        make, log = make_run(tmp_path, **{taken: str(port) if taken == "PORT" else f"{host}:{port}"})
        try:
            make.wait(timeout=180)
        finally:
            kill_all(make)

    said = log.read_text()
    assert make.returncode != 0
    assert f"{host}:{port}" in said and f"is in use by another program: `make run {taken}=" in said, said[-3000:]
    assert "Traceback" not in said and "Booting worker" not in said
