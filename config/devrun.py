"""The processes of a development install (`make run`): the web server, a Celery worker for delivery and one for
the other queues (docs/operations.md "Queues"), celery-beat and the SMTP listeners, in one terminal, stopped
together."""

import errno
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from config.queues import DELIVERY, QUEUES

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# A process still running this long after its SIGTERM is killed with its process group (a stop normally takes 1 to 3
# seconds: docs/operations.md "Development install").
KILL_AFTER_SECONDS = 30
POLL_SECONDS = 0.1


def dev_processes(*, port: int) -> dict[str, list[str]]:
    """Each process's command line, as deploy/systemd starts it in production, with smaller pools."""
    bin_dir = Path(sys.executable).parent
    celery = [str(bin_dir / "celery"), "-A", "config"]

    def worker(name: str, queues: list[str], concurrency: int) -> list[str]:
        options = f"--loglevel INFO -n {name}@%h -Q {','.join(queues)} --concurrency {concurrency}"
        return [*celery, "worker", *options.split()]

    return {
        "web": [
            str(bin_dir / "gunicorn"),
            *f"-c config/gunicorn.py --bind 127.0.0.1:{port} --access-logfile - config.wsgi".split(),
        ],
        "delivery worker": worker("delivery", [DELIVERY], 1),
        "worker": worker("work", [queue for queue in QUEUES if queue != DELIVERY], 2),
        "beat": [*celery, "beat", "--loglevel", "INFO"],
        "smtp": [sys.executable, "manage.py", "smtp_server"],
    }


def address_in_use(host: str, port: int) -> bool:
    """Whether another program listens on host:port (gunicorn, whose workers each bind with SO_REUSEPORT, would
    retry forever instead of ending)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed connection's TIME_WAIT is no owner
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def dev_processes_run(commands: dict[str, list[str]]) -> int:
    """Run the processes until Ctrl-C (or SIGTERM, SIGHUP) or until one of them ends by itself.

    1. Each process starts in a process group of its own, out of reach of the terminal's Ctrl-C: it is signalled
       once, from here, and never a second time, which would turn Celery's warm shutdown into a cold one (and
       gunicorn's graceful stop into a hurried one) with alarming output.
    2. On the first stop signal every process gets one SIGTERM, "finish and exit" to each of them. Later signals are
       ignored: a SIGTERM to make's process group reaches make, which passes it on here a second time.
    3. A process still running KILL_AFTER_SECONDS later is killed with its group.
    Returns 0 after a requested stop, 1 when a process ended by itself (the others are stopped too).
    """
    requested = []
    for number in STOP_SIGNALS:
        signal.signal(number, lambda number, frame: requested.append(number))
    running = {name: subprocess.Popen(command, process_group=0) for name, command in commands.items()}

    ended = None
    while not requested and ended is None:
        ended = next((name for name, process in running.items() if process.poll() is not None), None)
        time.sleep(POLL_SECONDS)
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    if ended is not None:
        print(f"{ended} ended with exit code {running[ended].returncode}; stopping the others", file=sys.stderr)

    for process in running.values():
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + KILL_AFTER_SECONDS
    for name, process in running.items():
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            print(f"{name} still running {KILL_AFTER_SECONDS} s after SIGTERM; killing it", file=sys.stderr)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return 0 if ended is None else 1
