"""The SMTP listeners of `python manage.py smtp_server`, built from the settings and run on one event loop.

Each listener is an address and an aiosmtpd handler (`Listener`); a handler with an `authenticate` coroutine takes
AUTH PLAIN and LOGIN. What every listener shares is here: the greeting name (`SMTP_HOSTNAME`), STARTTLS when a
certificate and key are set, the size limit (`SMTP_MAX_MESSAGE_BYTES`, advertised with SIZE; aiosmtpd stops keeping
the data of a message once it passes the limit, reads the rest to the final dot and answers 552), and whether AUTH
may come before STARTTLS (`SMTP_ALLOW_PLAINTEXT_AUTH`, only on loopback unless TLS is configured).

Stopping (SIGTERM, SIGINT): the listening sockets close at once; a session in the middle of a DATA is given
SHUTDOWN_GRACE_SECONDS to finish it (its message is answered only after its commit), and every session is then
closed with a 421. A message committed but not answered is accepted again as a resend (its Message-ID) and not
sent twice.
"""

import asyncio
import ipaddress
import logging
import os
import re
import signal
import ssl
from dataclasses import dataclass

from aiosmtpd.smtp import SMTP, AuthResult
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.metrics import SMTP_MESSAGES
from messaging.smtp.inbound import InboundHandler
from messaging.smtp.message import ADDR_SPEC
from messaging.smtp.submission import SubmissionHandler

logger = logging.getLogger(__name__)
SHUTDOWN_GRACE_SECONDS = 30
SIZE_REFUSED = "552 5.3.4 Message too big for system"
# aiosmtpd's own replies to a message past the size limit (at MAIL FROM ... SIZE= and after DATA), given the
# enhanced status code of the ruling instead.
_SIZE_REPLIES = {
    b"552 Error: Too much mail data",
    b"552 Error: message size exceeds fixed maximum message size",
}
# The path of a MAIL FROM or RCPT TO as nearly every client writes it: `<plain address>`, then the parameters.
_PLAIN_PATH = re.compile(rf"<({ADDR_SPEC})>((?:[ \t].*)?)", re.DOTALL)


@dataclass(frozen=True)
class Listener:
    """One listening address and the aiosmtpd handler of its sessions; `name` labels its metrics and logs."""

    name: str
    address: str
    handler: object

    @property
    def takes_auth(self) -> bool:
        return hasattr(self.handler, "authenticate")

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.address.rpartition(":")
        if not host or not port.isdigit():
            raise ImproperlyConfigured(f"SMTP listener {self.name}: expected host:port, got {self.address!r}")
        return host.strip("[]"), int(port)


def listeners() -> list[Listener]:
    """The listeners the settings turn on (an empty address turns one off)."""
    configured = [
        Listener("submission", settings.SMTP_SUBMISSION_LISTEN, SubmissionHandler()),
        Listener("inbound", settings.SMTP_INBOUND_LISTEN, InboundHandler()),
    ]
    return [listener for listener in configured if listener.address]


def tls_context() -> ssl.SSLContext | None:
    if not (settings.SMTP_TLS_CERT_FILE and settings.SMTP_TLS_KEY_FILE):
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.SMTP_TLS_CERT_FILE, settings.SMTP_TLS_KEY_FILE)
    return context


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listeners_check(configured: list[Listener], config: "Config") -> None:
    """Refuse to start a listener that would take a secret key in clear text from the network: plaintext AUTH is
    allowed only on loopback unless STARTTLS is configured."""
    for listener in configured:
        host, _ = listener.host_port
        if listener.takes_auth and config.allow_plaintext_auth and config.tls is None and not _loopback(host):
            raise ImproperlyConfigured(
                f"SMTP_ALLOW_PLAINTEXT_AUTH is set but {listener.name} listens on {listener.address}, which is not "
                "loopback, without TLS: set SMTP_TLS_CERT_FILE and SMTP_TLS_KEY_FILE, or listen on 127.0.0.1"
            )


def _credentials_decoded(server, session, envelope, mechanism, auth_data) -> AuthResult:
    # aiosmtpd calls its authenticator synchronously; the check needs the database, so this one only passes the
    # decoded credentials on, and `Session.auth_PLAIN`/`auth_LOGIN` have the handler check them in a worker thread.
    return AuthResult(success=True, auth_data=auth_data)


@dataclass(frozen=True)
class Config:
    """What the settings say for every listener, read once when the server is built."""

    hostname: str
    max_message_bytes: int
    tls: ssl.SSLContext | None
    allow_plaintext_auth: bool

    @classmethod
    def from_settings(cls) -> "Config":
        return cls(
            hostname=settings.SMTP_HOSTNAME,
            max_message_bytes=settings.SMTP_MAX_MESSAGE_BYTES,
            tls=tls_context(),
            allow_plaintext_auth=settings.SMTP_ALLOW_PLAINTEXT_AUTH,
        )


class Session(SMTP):
    """aiosmtpd's SMTP session with what every Herald listener adds: AUTH checked by the handler's `authenticate`
    coroutine, the ruled reply to an oversized message, and its place in the server's set of open sessions."""

    def __init__(self, listener: Listener, config: Config, sessions: set, loop):
        super().__init__(
            listener.handler,
            hostname=config.hostname,
            ident="Herald ESMTP",
            data_size_limit=config.max_message_bytes,
            tls_context=config.tls,
            auth_require_tls=not config.allow_plaintext_auth,
            authenticator=_credentials_decoded if listener.takes_auth else None,
            auth_exclude_mechanism=() if listener.takes_auth else ("PLAIN", "LOGIN"),
            loop=loop,
        )
        self.listener = listener
        self.sessions = sessions
        self.in_data = False

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.sessions.add(self)

    def connection_lost(self, error) -> None:
        self.sessions.discard(self)
        super().connection_lost(error)

    async def push(self, status) -> None:
        if isinstance(status, str):
            status = status.encode("ascii", "replace")
        if status in _SIZE_REPLIES:
            SMTP_MESSAGES.labels(listener=self.listener.name, outcome="refused", reason="size").inc()
            status = SIZE_REFUSED.encode()
        elif status.startswith(b"250-AUTH") and not self.listener.takes_auth:
            return  # a listener without AUTH does not advertise it
        await super().push(status)

    def _getaddr(self, arg: str):
        # aiosmtpd reads every path with the email package's full address parser (a quarter of the event loop's
        # time per message); a plain `<address>` gives the same address and rest read directly.
        plain = _PLAIN_PATH.fullmatch(arg.lstrip()) if arg else None
        if plain is None or (self.local_part_limit and len(plain[1].rpartition("@")[0]) > self.local_part_limit):
            return super()._getaddr(arg)
        return plain[1], plain[2].lstrip()

    async def smtp_DATA(self, arg) -> None:
        self.in_data = True
        try:
            await super().smtp_DATA(arg)
        finally:
            self.in_data = False

    async def auth_PLAIN(self, _, args):
        return await self._checked(await super().auth_PLAIN(_, args))

    async def auth_LOGIN(self, _, args):
        return await self._checked(await super().auth_LOGIN(_, args))

    async def _checked(self, decoded: AuthResult) -> AuthResult:
        if not decoded.success:
            return decoded
        credentials = decoded.auth_data
        return await self.listener.handler.authenticate(self, self.session, credentials.login, credentials.password)


class SmtpServer:
    """The listeners on one event loop: `start` binds them, `stop` closes them as the module says."""

    def __init__(self, configured: list[Listener]):
        self.listeners = configured
        self.config = Config.from_settings()
        listeners_check(configured, self.config)
        self.sessions: set[Session] = set()
        self.servers: list[asyncio.Server] = []

    async def start(self, *, reuse_port: bool = False) -> list[tuple[Listener, tuple[str, int]]]:
        """Bind every listener; returns each with the address it listens on (port 0 binds a free port). With
        `reuse_port`, each listening socket is one of several processes' on the same address (SO_REUSEPORT), among
        which the kernel spreads new connections (`messaging.smtp.processes`)."""
        loop = asyncio.get_running_loop()
        bound = []
        for listener in self.listeners:
            host, port = listener.host_port
            server = await loop.create_server(
                lambda listener=listener: Session(listener, self.config, self.sessions, loop),
                host,
                port,
                reuse_port=reuse_port or None,
            )
            self.servers.append(server)
            bound.append((listener, server.sockets[0].getsockname()[:2]))
        return bound

    async def stop(self, grace: float = SHUTDOWN_GRACE_SECONDS) -> None:
        for server in self.servers:
            server.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.sessions:
            for session in list(self.sessions):
                if not session.in_data or loop.time() >= deadline:
                    self._close(session)
            if self.sessions:
                await asyncio.sleep(0.05)
        for server in self.servers:
            await server.wait_closed()

    def _close(self, session: Session) -> None:
        self.sessions.discard(session)
        if session.transport is not None:
            session.transport.write(b"421 4.3.2 Service shutting down\r\n")
            session.transport.close()


# How often a process of several (`messaging.smtp.processes`) checks that its parent still runs.
PARENT_CHECK_SECONDS = 1.0


async def _parent_gone(parent: int) -> None:
    while os.getppid() == parent:
        await asyncio.sleep(PARENT_CHECK_SECONDS)
    logger.warning("SMTP server process %s: its parent %s is gone, stopping", os.getpid(), parent)


async def serve(configured: list[Listener], *, on_start=None, reuse_port: bool = False, parent: int | None = None):
    """Run the listeners until SIGTERM or SIGINT, then stop them cleanly; `on_start(server, bound)` is told what
    listens. A process of several (`messaging.smtp.processes`) binds with `reuse_port` and stops as well when its
    `parent` is gone (killed without a chance to stop it)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    server = SmtpServer(configured)
    bound = await server.start(reuse_port=reuse_port)
    if on_start is not None:
        on_start(server, bound)
    watch = None
    if parent is not None:
        watch = asyncio.ensure_future(_parent_gone(parent))
        watch.add_done_callback(lambda _: stopping.set())
    await stopping.wait()
    if watch is not None:
        watch.cancel()
    logger.info("SMTP server stopping")
    await server.stop()
