"""The SMTP server of `manage.py smtp_server`, run in process for tests: its own event loop in a thread, on a free
loopback port, with a certificate of a test CA (`workflows.tests.receivers.certificates`) when it offers STARTTLS."""

import asyncio
import contextlib
import smtplib
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.db import connections
from django.test import override_settings

from messaging.smtp.inbound import InboundHandler
from messaging.smtp.server import Listener, SmtpServer
from messaging.smtp.submission import SubmissionHandler
from workflows.tests.receivers import certificates

WORKERS = 4


@dataclass
class Running:
    server: SmtpServer
    host: str
    port: int
    ca_file: Path | None = None

    def client(self, *, tls: bool = True, key: str | None = None) -> smtplib.SMTP:
        """A client as an app would connect: EHLO, STARTTLS verified against the test CA (for `localhost`), AUTH."""
        client = smtplib.SMTP("localhost", self.port, timeout=10)
        client.ehlo()
        if tls:
            client.starttls(context=ssl.create_default_context(cafile=str(self.ca_file)))
            client.ehlo()
        if key is not None:
            client.login("herald", key)
        return client


@contextlib.contextmanager
def running(*, tls_folder: Path | None = None, listener: str = "submission", **overrides):
    """A listener of `manage.py smtp_server` (submission or inbound) on a free loopback port with these settings
    (STARTTLS with a certificate made in `tls_folder`), stopped after the block."""
    ca_file, tls = None, {"SMTP_TLS_CERT_FILE": "", "SMTP_TLS_KEY_FILE": ""}
    if tls_folder is not None:
        ca_file = certificates(tls_folder, "localhost").ca_file
        tls = {
            "SMTP_TLS_CERT_FILE": str(tls_folder / "server.pem"),
            "SMTP_TLS_KEY_FILE": str(tls_folder / "server.key"),
        }
    with override_settings(SMTP_HOSTNAME="localhost", **tls, **overrides):
        handler = SubmissionHandler() if listener == "submission" else InboundHandler()
        server = SmtpServer([Listener(listener, "127.0.0.1:0", handler)])
    loop = asyncio.new_event_loop()
    # The worker threads of `bridge.in_django`: shut down with the server, their database connections with them.
    workers = ThreadPoolExecutor(max_workers=WORKERS)
    loop.set_default_executor(workers)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    [(_, (host, port))] = asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=10)
    try:
        yield Running(server=server, host=host, port=port, ca_file=ca_file)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(grace=5), loop).result(timeout=30)
        # Each worker thread closes its own connections (a barrier: no thread takes two of these).
        barrier = threading.Barrier(WORKERS)
        for _ in range(WORKERS):
            workers.submit(lambda: (connections.close_all(), barrier.wait(timeout=10)))
        workers.shutdown(wait=True)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
