"""The submission listener (docs/smtp.md): an app authenticates with its project's secret key and hands over
messages; each becomes the emails a `POST /v1/send` would make, through the one send path.

The aiosmtpd hooks (`SubmissionHandler`) are thin: each runs one function of this module in a worker thread
(`bridge.in_django`) and answers what it returns. `message_submit` is the send: read the message, answer a resend
of a message already accepted as before, count the rate limit, queue one email per recipient and remember the
Message-ID, in one transaction.
"""

import hashlib
import logging
import uuid
from dataclasses import dataclass

from aiosmtpd.smtp import AuthResult
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.http.idempotency import idempotency_record_get, idempotency_record_once
from accounts.models import Project
from accounts.tenancy.selectors import api_key_lookup
from core.errors import BillingLimitExceeded, ServiceError, ValidationFailed
from core.ids import uuid7_of
from core.metrics import SMTP_MESSAGES
from core.ratelimit import counter_increment, counter_value, project_scope, rate_limit_hit
from domains.services import DomainNotVerified
from messaging.feedback.suppression import suppression_message, suppressions_for
from messaging.sending import parse
from messaging.sending.services import SEND, emails_queue
from messaging.smtp.bridge import in_django
from messaging.smtp.message import Unparseable, message_read

logger = logging.getLogger(__name__)
LISTENER = "submission"
# More failed AUTH attempts than this from one client address within the window close the connection (421), and
# every AUTH from that address is refused until the window, which starts with the first failure, has passed.
AUTH_FAILURES_ALLOWED = 10
AUTH_FAILURE_WINDOW_SECONDS = 600
# A resend is recognised by its Message-ID among the project's idempotency records (`accounts.http.idempotency`,
# kept IDEMPOTENCY_KEY_TTL_HOURS, 24 by default), under a key of its own kind and the method `SMTP`; the record's
# `path` holds what the accepting reply named, so that a resend is answered the same.
RESEND_METHOD = "SMTP"
CREDENTIALS_INVALID = "535 5.7.8 Authentication credentials invalid"


@dataclass(frozen=True)
class Reply:
    """An SMTP reply, and how it is counted (`core.metrics.SMTP_MESSAGES`)."""

    text: str
    outcome: str = "refused"
    reason: str = ""

    def counted(self) -> str:
        SMTP_MESSAGES.labels(listener=LISTENER, outcome=self.outcome, reason=self.reason).inc()
        return self.text


def _reply(code: str, message: str, reason: str) -> Reply:
    # The reply is one ASCII line (aiosmtpd writes ASCII): a message naming a non-ASCII address or name is kept
    # readable rather than failing the write.
    line = " ".join(message.split()).encode("ascii", "replace").decode("ascii")[:400]
    return Reply(f"{code} {line}", reason=reason)


@dataclass(frozen=True)
class AuthOutcome:
    project: Project | None = None
    locked: bool = False


def _failures_key(client: str) -> str:
    return f"smtp:auth-failures:{client}"


def submission_authenticate(*, client: str, password: str) -> AuthOutcome:
    """The project whose secret key `password` is, for a client at address `client`; none for a public key, an
    unknown key or a disabled project. `locked` once the client has failed more than AUTH_FAILURES_ALLOWED times in
    the window (counted in the shared cache, so every process of the listener agrees)."""
    key = _failures_key(client)
    if counter_value(key) > AUTH_FAILURES_ALLOWED:
        return AuthOutcome(locked=True)
    match = api_key_lookup(token=password.strip())
    if match is not None and match.kind == "secret" and not match.project.disabled:
        return AuthOutcome(project=match.project)
    failures = counter_increment(key, timeout=AUTH_FAILURE_WINDOW_SECONDS)
    return AuthOutcome(locked=failures > AUTH_FAILURES_ALLOWED)


def recipient_check(*, project: Project, address: str) -> Reply | None:
    """A refusal of one RCPT TO: an address `/v1/send` would refuse, or one on the project's suppression list.
    None: accepted."""
    if not parse.valid_email(address) or len(address) > 320:
        return _reply("553 5.1.3", f"Invalid recipient address {address}", "recipient")
    suppressed = suppressions_for(project_id=project.id, emails=[address])
    if suppressed:
        [suppression] = suppressed.values()
        return _reply("550 5.7.1", suppression_message(suppression), "suppressed")
    return None


def _resend_key(message_id: str) -> str:
    # A Message-ID may be longer than an idempotency key (255): a long one is kept as its digest.
    key = f"smtp:{message_id}"
    return key if len(key) <= 255 else f"smtp:sha256:{hashlib.sha256(message_id.encode()).hexdigest()}"


def _accepted_before(project: Project, key: str) -> Reply | None:
    record = idempotency_record_get(project=project, key=key)
    if record is None or record.method != RESEND_METHOD or record.status_code != 250:
        return None
    if record.expires_at <= timezone.now():
        return None  # past its lifetime: the message is accepted again, and the record taken over
    return Reply(f"250 2.0.0 Ok: {record.path}", outcome="accepted", reason="resend")


class _AcceptedBefore(Exception):
    """The project already accepted a message with this Message-ID (committed, or committing concurrently)."""


class _Refused(Exception):
    """A refusal found inside the transaction: raised so that the Message-ID's record is rolled back with it."""

    def __init__(self, reply: Reply):
        self.reply = reply


def _refusal(error: ServiceError) -> Reply:
    """The reply to a refusal of the send path (docs/smtp.md, "Reply codes")."""
    if isinstance(error, DomainNotVerified):
        return _reply("550 5.7.1", error.message, "sender")
    if isinstance(error, BillingLimitExceeded):
        return _reply("452 4.7.1", error.message, "cap")
    if isinstance(error, ValidationFailed):
        first = (error.errors or [{}])[0]
        where = f"{first['field']}: " if first.get("field") else ""
        return _reply("550 5.6.0", f"{where}{first.get('message') or error.message}", "content")
    if error.status == 413:
        return _reply("552 5.3.4", error.message, "size")
    if error.status >= 500:
        return _reply("451 4.3.0", error.message, "internal")
    return _reply("550 5.7.1", error.message, "refused")


def message_submit(*, project: Project, recipients: list[str], raw: bytes) -> Reply:
    """Queue the emails of one submitted message, one per envelope recipient, as `POST /v1/send` would; the reply.

    1. Read the message (`messaging.smtp.message`): unparseable 554, refused by the send rules 550.
    2. In one transaction: record the Message-ID and the reply among the project's idempotency records, in one
       statement (`idempotency_record_once`; the reply names the first email, whose id is chosen here for a single
       recipient, and is written after the emails for several); count the message against the project's
       secret-key rate limit (the one `/v1/send` counts in; past it 451 4.7.1); queue the emails (`emails_queue`,
       the SEND policy: the verified sender domain, the monthly cap, the contacts' upsert, rendering and the
       hand-over to delivery after the commit). A refusal rolls the record back with the rest.
    3. A Message-ID the project already accepted within the records' lifetime finds its record taken: nothing is
       stored, counted or sent, and the reply is the one the record holds. Of two concurrent submissions of one
       Message-ID, the second's insert waits for the first's commit and then finds it taken too.
    """
    try:
        submitted = message_read(raw, default_sender_name=project.name)
        addresses = submitted.recipients(recipients)
    except Unparseable as error:
        return _reply("554 5.6.0", f"The message cannot be parsed: {error}", "parse")
    except ValidationFailed as error:
        return _refusal(error)
    key = _resend_key(submitted.message_id) if submitted.message_id else None
    # Time-ordered like every email id (messaging.models.created_window finds the row by it).
    email_id = uuid7_of(timezone.now()) if len(addresses) == 1 else None
    try:
        with transaction.atomic():
            if email_id is not None:
                if key is not None:
                    _record_or_raise(project, key, f"queued as {email_id}")
                _rate_limit_check(project)
                queued = _queue(project, submitted, addresses, email_id)
            else:
                queued = _queue(project, submitted, addresses, None)
                if key is not None:
                    _record_or_raise(project, key, f"queued as {queued[0].email.id}")
                _rate_limit_check(project)
    except _AcceptedBefore:
        return _accepted_before(project, key) or _reply(
            "451 4.3.0", "The message is being accepted, try again", "internal"
        )
    except _Refused as refused:
        return refused.reply
    return Reply(f"250 2.0.0 Ok: queued as {queued[0].email.id}", outcome="accepted")


def _queue(project: Project, submitted, addresses: list, email_id: uuid.UUID | None) -> list:
    try:
        return emails_queue(
            project=project, content=submitted.content, recipients=addresses, policy=SEND, email_id=email_id
        )
    except ServiceError as error:
        raise _Refused(_refusal(error)) from error


def _rate_limit_check(project: Project) -> None:
    # Counted once the Message-ID is known new: a recognised resend does not count.
    limit = rate_limit_hit(project_scope(project.id, "secret"))
    if limit is not None and limit.exceeded:
        raise _Refused(_reply("451 4.7.1", f"Rate limit exceeded, try again in {limit.reset} seconds", "rate"))


def _record_or_raise(project: Project, key: str, reply: str) -> None:
    # The record's `path` holds what the accepting reply named (for an HTTP key, the request's path).
    if not idempotency_record_once(project=project, key=key, method=RESEND_METHOD, path=reply, status_code=250):
        raise _AcceptedBefore


INTERNAL_ERROR = Reply("451 4.3.0 Internal error, try again later", reason="internal")


class SubmissionHandler:
    """The aiosmtpd hooks of the submission listener (`messaging.smtp.server` runs it): AUTH with a secret key,
    then MAIL, RCPT and DATA as above. The session's `auth_data` is the authenticated project."""

    async def authenticate(self, server, session, login: bytes, password: bytes) -> AuthResult:
        outcome = await in_django(
            submission_authenticate, client=str(session.peer[0]), password=password.decode("utf-8", "replace")
        )
        if outcome.project is not None:
            return AuthResult(success=True, auth_data=outcome.project)
        SMTP_MESSAGES.labels(listener=LISTENER, outcome="refused", reason="auth").inc()
        if outcome.locked:
            await server.push("421 4.7.0 Too many failed authentication attempts, try again later")
            server.transport.close()
            return AuthResult(success=False, handled=True)
        return AuthResult(success=False, handled=False, message=CREDENTIALS_INVALID)

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if not session.authenticated:
            return Reply("530 5.7.0 Authentication required", reason="auth").counted()
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 2.1.0 Ok"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if len(envelope.rcpt_tos) >= settings.SMTP_MAX_RECIPIENTS:
            return Reply("452 4.5.3 Too many recipients", reason="recipients").counted()
        refusal = await in_django(recipient_check, project=session.auth_data, address=address)
        if refusal is not None:
            return refusal.counted()
        if address.lower() not in (known.lower() for known in envelope.rcpt_tos):
            envelope.rcpt_tos.append(address)
            envelope.rcpt_options.extend(rcpt_options)
        return "250 2.1.5 Ok"

    async def handle_DATA(self, server, session, envelope):
        try:
            reply = await in_django(
                message_submit, project=session.auth_data, recipients=envelope.rcpt_tos, raw=envelope.original_content
            )
        except Exception:
            logger.exception("Submission of a message from %s failed", session.peer)
            reply = INTERNAL_ERROR
        return reply.counted()

    async def handle_exception(self, error: Exception) -> str:
        # aiosmtpd's answer to an exception in a hook would name it; the client gets a temporary failure instead.
        logger.exception("SMTP submission session failed", exc_info=error)
        return INTERNAL_ERROR.counted()
