"""A real SMTP server on loopback (aiosmtpd) that records what it receives, for tests that send mail."""

import asyncio
import email
import threading
import time
from dataclasses import dataclass, field
from email import policy

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope

from config.tests.processes import free_port


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    raw: bytes
    # When the message was accepted (`time.monotonic()`), for tests that measure delivery latency.
    at: float = field(default_factory=time.monotonic)

    @property
    def message(self) -> email.message.EmailMessage:
        return email.message_from_bytes(self.raw, policy=policy.default)

    @property
    def html(self) -> str:
        return self.message.get_body(("html",)).get_content()

    @property
    def text(self) -> str:
        return self.message.get_body(("plain",)).get_content()


@dataclass
class SmtpSink:
    """Stores every message; `reply_to_rcpt` makes it answer RCPT with a chosen status instead (e.g. '550 no such
    user'), `refused` the same for some recipients only (address -> reply), `reply_to_mail` the same for MAIL. It
    offers PIPELINING (as Postfix does) unless `pipelining` is off, and takes `delay` seconds to accept each message
    (a slow relay)."""

    host: str = "127.0.0.1"
    port: int = 0
    received: list[Received] = field(default_factory=list)
    reply_to_rcpt: str | None = None
    refused: dict[str, str] = field(default_factory=dict)
    reply_to_mail: str | None = None
    pipelining: bool = True
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_EHLO(self, server, session, envelope: Envelope, hostname, responses):
        session.host_name = hostname
        if self.pipelining:
            return [*responses[:-1], "250-PIPELINING", responses[-1]]
        return responses

    async def handle_MAIL(self, server, session, envelope: Envelope, address, mail_options):
        if self.reply_to_mail:
            return self.reply_to_mail
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope: Envelope, address, rcpt_options):
        reply = self.refused.get(address) or self.reply_to_rcpt
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope: Envelope):
        await asyncio.sleep(self.delay)
        with self.lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 Message accepted for delivery"


def start_sink(host: str = "127.0.0.1") -> tuple[SmtpSink, Controller]:
    sink = SmtpSink(host=host, port=free_port())
    controller = Controller(sink, hostname=sink.host, port=sink.port)
    controller.start()
    return sink, controller
