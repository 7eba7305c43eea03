"""The inbound listener of `manage.py smtp_server` on loopback, driven with smtplib as a remote mail server would,
against the loopback DNS server of the domains tests."""

import re
import smtplib
from dataclasses import dataclass

import pytest

# The loopback DNS server, with the service's resolver pointed at it.
from domains.tests.conftest import _dns_server, _fresh_dns_memory, dns_server, dns_zone  # noqa: F401
from messaging.smtp.tests.servers import running


@dataclass
class Reply:
    code: int
    text: str

    @property
    def line(self) -> str:
        return f"{self.code} {self.text}"


@dataclass
class Session:
    """One message's exchange: the reply to MAIL, to each RCPT, and to DATA (None when no recipient was taken)."""

    mail: Reply
    rcpts: list[Reply]
    data: Reply | None


class Inbound:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    def send(self, raw: bytes | str, *, to, mail_from: str = "sender@remote.example", helo: str = "mx.remote.example"):
        """Hand `raw` over as a remote server would: EHLO, MAIL, one RCPT per address, DATA if any was taken."""
        raw = raw.encode() if isinstance(raw, str) else raw
        raw = re.sub(rb"\r?\n", b"\r\n", raw)  # on the wire every line ends in CRLF
        recipients = [to] if isinstance(to, str) else list(to)
        with smtplib.SMTP(self.host, self.port, local_hostname=helo, timeout=30) as smtp:
            smtp.ehlo(helo)
            mail = Reply(*_text(smtp.mail(mail_from)))
            if mail.code != 250:
                return Session(mail, [], None)
            rcpts = [Reply(*_text(smtp.rcpt(address))) for address in recipients]
            data = Reply(*_text(smtp.data(raw))) if any(reply.code == 250 for reply in rcpts) else None
            return Session(mail, rcpts, data)


def _text(reply: tuple[int, bytes]) -> tuple[int, str]:
    return reply[0], reply[1].decode()


@pytest.fixture
def inbound(transactional_db, settings) -> Inbound:
    """The listener on loopback: `inbound.send(raw, to=...)`."""
    with running(listener="inbound") as server:
        yield Inbound(server.host, server.port)
