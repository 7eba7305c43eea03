"""`manage.py smtp_server --processes N`: the listeners in N processes, so that the SMTP edge uses the cores the web
server's workers use (one event loop is one core).

Each process is a whole server (`messaging.smtp.server.serve`): its own event loop, worker threads and database
connections, and its own listening socket on every address, bound with SO_REUSEPORT; the kernel spreads new
connections over the processes, as it does over gunicorn's workers (`config/gunicorn.py`).

The parent starts them, watches them and stops them:
1. It binds every address itself first (SO_REUSEPORT, never listening, so the kernel hands it no connection): a
   port taken by another program fails at once, port 0 becomes one port that every process then shares, and the
   address stays reserved while a process is restarted.
2. It forks the processes (before any database connection is open; each opens its own).
3. A process that exits while the server runs is logged and started again, RESTART_DELAY_SECONDS later.
4. SIGTERM or SIGINT: each process is sent SIGTERM and stops as one server does (docs/smtp.md, "Running it"); the
   parent waits for them, kills one that outlives the grace, and returns.
A process whose parent is killed without this (SIGKILL) notices within a second and stops by itself.
"""

import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from dataclasses import replace
from multiprocessing.connection import wait

from django.db import connections

from core.metrics import process_exited
from messaging.smtp.server import SHUTDOWN_GRACE_SECONDS, Config, Listener, listeners_check, serve

logger = logging.getLogger(__name__)
RESTART_DELAY_SECONDS = 1.0
# After SIGTERM, a process gets the sessions' grace and this much more before it is killed.
STOP_MARGIN_SECONDS = 10.0


def _reserve(listener: Listener) -> tuple[socket.socket, Listener]:
    host, port = listener.host_port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    bound_port = sock.getsockname()[1]
    return sock, replace(listener, address=f"[{host}]:{bound_port}" if ":" in host else f"{host}:{bound_port}")


def _child(configured: list[Listener], parent: int) -> None:
    import asyncio

    # The parent's handlers are not this process's: until the server's own are installed, a signal stops it plainly.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    asyncio.run(serve(configured, reuse_port=True, parent=parent))


class Processes:
    """The parent of `count` server processes on `configured` listeners (the module says how it runs them)."""

    def __init__(self, configured: list[Listener], count: int):
        if count < 1:
            raise ValueError("at least one process")
        reserved = [_reserve(listener) for listener in configured]
        self.sockets = [sock for sock, _ in reserved]
        self.listeners = [listener for _, listener in reserved]
        self.config = Config.from_settings()
        listeners_check(self.listeners, self.config)
        self.count = count
        self.children: list[multiprocessing.Process] = []
        self.stopping = threading.Event()
        self._fork = multiprocessing.get_context("fork")

    def _start(self) -> multiprocessing.Process:
        child = self._fork.Process(target=_child, args=(self.listeners, os.getpid()), daemon=False)
        child.start()
        return child

    def run(self) -> None:
        """Start the processes and keep them running until `stop` (or SIGTERM/SIGINT, with `signals`)."""
        connections.close_all()  # a connection shared over fork would be used by two processes at once
        self.children = [self._start() for _ in range(self.count)]
        try:
            while not self.stopping.is_set():
                wait([child.sentinel for child in self.children], timeout=0.5)
                for index, child in enumerate(self.children):
                    if child.is_alive() or self.stopping.is_set():
                        continue
                    process_exited(child.pid)
                    logger.error("SMTP server process %s exited with %s; starting another", child.pid, child.exitcode)
                    if self.stopping.wait(RESTART_DELAY_SECONDS):
                        break
                    self.children[index] = self._start()
        finally:
            self._stop_children()
            for sock in self.sockets:
                sock.close()

    def stop(self, *_) -> None:
        self.stopping.set()

    def signals(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self.stop)

    def _stop_children(self) -> None:
        for child in self.children:
            if child.is_alive():
                os.kill(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS + STOP_MARGIN_SECONDS
        for child in self.children:
            child.join(timeout=max(0.0, deadline - time.monotonic()))
            if child.is_alive():
                logger.error("SMTP server process %s did not stop; killing it", child.pid)
                child.kill()
                child.join()
            process_exited(child.pid)
