"""The inbound listener's aiosmtpd handler (the MX of the projects' domains; docs/smtp.md, "Inbound mail").

No AUTH: anyone may hand over mail, but only for two kinds of address, decided at RCPT TO:
- any address at a domain a project has verified (exactly that name: a subdomain is another domain): the message
  becomes that project's `email.received` event (`messaging.smtp.received`);
- a bounce address, `bounce+<token>@<DOMAINS_RETURN_PATH_SUBDOMAIN>.<verified domain>`: the message is a delivery
  or abuse report about the email the token names (`messaging.feedback.reports`).
Every other recipient is `550 5.7.1 Relay access denied`: the listener never relays.

Replies:
- MAIL FROM past `SMTP_INBOUND_RATE_LIMIT_PER_MINUTE` messages from one client address in a minute: `450 4.7.1`
  (the sending server keeps the message and tries again later).
- RCPT TO past `SMTP_MAX_RECIPIENTS`: `452 4.5.3`; at a domain whose project is past its monthly `inbound` cap:
  `452 4.7.1` (the sending server retries for days, so the mail arrives once the cap is raised or the month turns).
- DATA: `250 2.0.0 Ok` once every project's copy is stored; a message without a sender address: `550 5.6.0`; a
  failure of the service (the database down): `451 4.3.0`, and the sending server retries. A report to a bounce
  address is always answered 250, even when its token is forged or names no email (logged): a bounce is never
  bounced.
TLS and the size limit are the server's (`messaging.smtp.server`); this handler sees only accepted envelopes.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from accounts.models import Project
from core.metrics import SMTP_MESSAGES
from core.ratelimit import rate_limit_hit
from domains.selectors import message_authenticate, verified_domain_named
from messaging.feedback.reports import report_record
from messaging.feedback.returnpath import bounce_token, token_read
from messaging.smtp.bridge import in_django
from messaging.smtp.received import Unreadable, inbound_allowed, message_receive, received_read

logger = logging.getLogger(__name__)

LISTENER = "inbound"
RELAY_DENIED = "550 5.7.1 Relay access denied"


@dataclass(frozen=True)
class Mailbox:
    """A recipient accepted at RCPT TO: a project's address, or a bounce address with its token."""

    address: str
    project: Project | None = None
    token: str | None = None


def _count(outcome: str, reason: str = "") -> None:
    SMTP_MESSAGES.labels(listener=LISTENER, outcome=outcome, reason=reason).inc()


def mailbox_for(address: str, domains: dict | None = None) -> tuple[Mailbox | None, str]:
    """The mailbox `address` names, or None with the reply that refuses it (steps 1-2 of RCPT TO, in a thread).

    `domains` is the session's memo of verified domains by name: a mail server hands over a queue of messages for
    one domain on one connection, and the domain's owner does not change within it. The monthly cap is read for
    every recipient."""
    _, at, host = address.rpartition("@")
    host = host.strip().rstrip(".").lower()
    if not at or not host:
        return None, RELAY_DENIED
    verified = _memoized(verified_domain_named, domains if domains is not None else {})
    token = bounce_token(address)
    prefix = f"{settings.DOMAINS_RETURN_PATH_SUBDOMAIN}."
    if token is not None and host.startswith(prefix) and verified(host.removeprefix(prefix)):
        return Mailbox(address=address, token=token), ""
    domain = verified(host)
    if domain is None:
        return None, RELAY_DENIED
    if not inbound_allowed(project=domain.project):
        return None, "452 4.7.1 The recipient's domain has reached its monthly inbound limit; try again later"
    return Mailbox(address=address, project=domain.project), ""


def _memoized(lookup, memo: dict):
    def verified(name: str):
        if name not in memo:
            memo[name] = lookup(name=name)
        return memo[name]

    return verified


def _reports(mailboxes: list[Mailbox], raw: bytes) -> None:
    for mailbox in mailboxes:
        email_id = token_read(mailbox.token)
        if email_id is None:
            logger.warning("Report to %s ignored: its token names no email of the service", mailbox.address)
            _count("report", "unknown")
            continue
        receipt = report_record(email_id=email_id, raw=raw)
        applied = receipt is not None and receipt.outcome == receipt.Outcome.PROCESSED
        _count("report", "applied" if applied else "ignored")


def deliver(*, mailboxes: list[Mailbox], raw: bytes, mail_from: str, ip: str, helo: str) -> list:
    """Store an accepted message for its mailboxes (the DATA step, in a thread): reports first, then one event per
    project. Raises `Unreadable` for a message to a project without a sender address."""
    _reports([mailbox for mailbox in mailboxes if mailbox.token], raw)
    projects: dict = {}
    for mailbox in mailboxes:
        if mailbox.project is not None:
            projects.setdefault(mailbox.project.id, (mailbox.project, []))[1].append(mailbox.address)
    if not projects:
        return []
    received = received_read(raw=raw, mail_from=mail_from)
    results = message_authenticate(message=raw, ip=ip, mail_from=mail_from, helo=helo)
    checks = {"spf": results.spf, "dkim": results.dkim, "dmarc": results.dmarc}
    # All projects' copies or none: a retried message (after a 451) is then never stored twice for one of them.
    with transaction.atomic():
        events = [
            message_receive(project=project, received=received, recipients=recipients, checks=checks)
            for project, recipients in projects.values()
        ]
    for _ in events:
        _count("received")
    return events


def _session_domains(session) -> dict:
    # Kept on aiosmtpd's session object, which lives as long as the connection.
    if not hasattr(session, "herald_domains"):
        session.herald_domains = {}
    return session.herald_domains


class InboundHandler:
    """aiosmtpd handler of the inbound listener: `Controller(InboundHandler(), ...)` or the server's own mount."""

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        ip = session.peer[0] if isinstance(session.peer, tuple) else str(session.peer)
        limit = settings.SMTP_INBOUND_RATE_LIMIT_PER_MINUTE
        state = await in_django(rate_limit_hit, f"smtp-inbound:{ip}", limit=limit) if limit > 0 else None
        if state is not None and state.exceeded:
            _count("refused", "rate")
            return "450 4.7.1 Too many messages from your address; try again later"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if len(envelope.rcpt_tos) >= settings.SMTP_MAX_RECIPIENTS:
            return "452 4.5.3 Too many recipients"
        try:
            mailbox, refusal = await in_django(mailbox_for, address, _session_domains(session))
        except Exception:
            logger.exception("Could not look up the recipient %s", address)
            return "451 4.3.0 Temporary failure; try again later"
        if mailbox is None:
            _count("refused", "relay" if refusal == RELAY_DENIED else "cap")
            return refusal
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        if not hasattr(envelope, "mailboxes"):
            envelope.mailboxes = []
        envelope.mailboxes.append(mailbox)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        ip = session.peer[0] if isinstance(session.peer, tuple) else str(session.peer)
        raw = envelope.original_content or b""
        try:
            await in_django(
                deliver,
                mailboxes=envelope.mailboxes,
                raw=raw,
                mail_from=envelope.mail_from or "",
                ip=ip,
                helo=session.host_name or "",
            )
        except Unreadable:
            _count("refused", "parse")
            return "550 5.6.0 The message has no sender address"
        except Exception:
            logger.exception("Could not store a message from %s", ip)
            _count("refused", "error")
            return "451 4.3.0 Temporary failure; try again later"
        return "250 2.0.0 Ok"
