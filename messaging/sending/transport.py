"""The mail transport: Django's email backend from `EMAIL_URL` (SMTP, a file outbox, or a django-anymail
provider), one connection reused for a whole batch, and failures sorted into transient and permanent.

Messages are built as bytes by `messaging.sending.mime` (and DKIM-signed) before they get here. SMTP-style backends send
those bytes as they are; provider backends (anymail) read the same content from the message's attributes.
"""

import contextlib
import smtplib
from collections.abc import Callable
from dataclasses import dataclass

from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend


class TransportError(Exception):
    """A message was not accepted. `permanent`: retrying cannot help (5xx); `connection_lost`: the connection is
    gone, so the rest of the batch cannot go out through it either."""

    def __init__(self, message: str, *, permanent: bool, connection_lost: bool = False):
        super().__init__(message)
        self.permanent = permanent
        self.connection_lost = connection_lost


class _RawMime:
    """What Django's SMTP, file and console backends expect from `EmailMessage.message()`."""

    def __init__(self, raw: bytes):
        self.raw = raw

    def as_bytes(self, linesep: str = "\n", **kwargs) -> bytes:
        return self.raw if linesep == "\r\n" else self.raw.replace(b"\r\n", linesep.encode())

    def as_string(self, **kwargs) -> str:
        return self.as_bytes(**kwargs).decode("ascii")

    def get_charset(self):
        return None

    def __getitem__(self, name):  # backends that peek at a header (e.g. locmem tests)
        return None


@dataclass
class PreparedMessage:
    """A message ready for the transport: the signed bytes with their envelope, and how to express the same
    message as a Django `EmailMessage` for backends that want one (providers)."""

    raw: bytes
    envelope_from: str
    recipients: list[str]
    as_email_message: Callable[[], "OutgoingMessage"]


class OutgoingMessage(EmailMultiAlternatives):
    def __init__(self, *, raw: bytes, **kwargs):
        super().__init__(**kwargs)
        self.raw = raw

    def message(self, *, policy=None):
        return _RawMime(self.raw)


def _smtp_error(exc: smtplib.SMTPException) -> TransportError:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        detail = "; ".join(
            f"{code} {msg.decode(errors='replace') if isinstance(msg, bytes) else msg}"
            for code, msg in exc.recipients.values()
        )
        return TransportError(f"Recipient refused: {detail}", permanent=all(500 <= c < 600 for c in codes))
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        return TransportError(f"SMTP server disconnected: {exc}", permanent=False, connection_lost=True)
    if isinstance(exc, smtplib.SMTPResponseException):
        error = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        return TransportError(f"{exc.smtp_code} {error}", permanent=500 <= exc.smtp_code < 600)
    return TransportError(f"SMTP error: {exc}", permanent=False, connection_lost=True)


def _smtp_sendmail(smtp: smtplib.SMTP, envelope_from: str, recipients: list[str], raw: bytes) -> None:
    """`smtplib.SMTP.sendmail` for bare ASCII addresses, with the same replies, exceptions and resets.

    1. `sendmail` passes both addresses through `email.utils.parseaddr` to quote them: a third of the CPU of the
       whole SMTP exchange, for addresses that `messaging.sending.mime.format_address` already wrote as bare addr-specs.
    2. When the server offers PIPELINING (RFC 2920), MAIL, RCPT and DATA go in one write and their replies are read
       in order: two round trips per message instead of four. A refusal is read to the end (and a DATA accepted
       anyway is closed with an empty message) so that the connection stays in step for the next message.
    """
    if any(char in address for address in (envelope_from, *recipients) for char in "\r\n<>"):
        # Checked addresses never contain these; refuse rather than write them into a command.
        raise smtplib.SMTPRecipientsRefused({address: (501, b"Bad address") for address in recipients})
    smtp.ehlo_or_helo_if_needed()
    size = f" size={len(raw)}" if smtp.does_esmtp and smtp.has_extn("size") else ""
    commands = [f"MAIL FROM:<{envelope_from}>{size}", *(f"RCPT TO:<{recipient}>" for recipient in recipients), "DATA"]
    pipelined = smtp.does_esmtp and smtp.has_extn("pipelining")
    if pipelined:
        smtp.send("".join(f"{command}\r\n" for command in commands))
    pending = iter(commands)

    def reply() -> tuple[int, bytes]:
        return smtp.getreply() if pipelined else smtp.docmd(next(pending))

    code, message = reply()
    if code != 250:
        _abandon(smtp, code, unread=len(recipients) + 1 if pipelined else 0)
        raise smtplib.SMTPSenderRefused(code, message, envelope_from)
    refused = {}
    for recipient in recipients:
        code, message = reply()
        if code not in (250, 251):
            refused[recipient] = (code, message)
        if code == 421:
            smtp.close()
            raise smtplib.SMTPRecipientsRefused(refused)
    if len(refused) == len(recipients):
        _abandon(smtp, code, unread=1 if pipelined else 0)
        raise smtplib.SMTPRecipientsRefused(refused)
    code, message = reply()
    if code != 354:
        _abandon(smtp, code)
        raise smtplib.SMTPDataError(code, message)
    # smtplib's dot-stuffing, as one bytes.replace (its multiline regex cost 50 us per 10 KB message).
    stuffed = (b"\n" + raw).replace(b"\n.", b"\n..")[1:]
    smtp.send(stuffed + (b".\r\n" if stuffed.endswith(b"\r\n") else b"\r\n.\r\n"))
    code, message = smtp.getreply()
    if code != 250:
        _abandon(smtp, code)
        raise smtplib.SMTPDataError(code, message)


def _abandon(smtp: smtplib.SMTP, code: int, *, unread: int = 0) -> None:
    """After a refusal: close on 421 (the server is going away); else read the `unread` replies still owed to
    pipelined commands, end a DATA the server accepted anyway with an empty message, and reset the transaction
    for the next message."""
    if code == 421:
        smtp.close()
        return
    with contextlib.suppress(smtplib.SMTPServerDisconnected):
        for _ in range(unread):
            code, _message = smtp.getreply()
        if unread and code == 354:
            smtp.send(b".\r\n")
            smtp.getreply()
        smtp.rset()


def _provider_error(exc: Exception) -> TransportError | None:
    try:
        from anymail.exceptions import AnymailAPIError, AnymailRecipientsRefused
    except ImportError:  # pragma: no cover - anymail is a requirement
        return None
    if isinstance(exc, AnymailRecipientsRefused):
        return TransportError(str(exc), permanent=True)
    if isinstance(exc, AnymailAPIError):
        status = getattr(exc, "status_code", None) or 0
        return TransportError(str(exc), permanent=400 <= status < 500 and status not in (408, 429))
    return None


class Transport:
    """`with Transport() as transport: transport.send(message)` over one connection."""

    def __enter__(self):
        self.connection = get_connection(fail_silently=False)
        try:
            self.connection.open()
        except smtplib.SMTPException as exc:
            raise _smtp_error(exc) from exc
        except OSError as exc:
            raise TransportError(
                f"Cannot connect to the mail server: {exc}", permanent=False, connection_lost=True
            ) from exc
        return self

    def __exit__(self, error_type, *exc_info):
        # Closing a broken connection must not hide the error that broke it. Left on an error (a time limit in the
        # middle of an exchange), the exchange is in an unknown state, where a QUIT could wait EMAIL_TIMEOUT for an
        # answer that never comes: the socket is dropped instead.
        with contextlib.suppress(Exception):
            smtp = self._smtp()
            if error_type is not None and smtp is not None:
                smtp.close()
            self.connection.close()

    def _smtp(self) -> smtplib.SMTP | None:
        """The open smtplib connection of Django's SMTP backend, which takes the prepared bytes as they are."""
        if isinstance(self.connection, SmtpBackend):
            return self.connection.connection
        return None

    def send(self, prepared: PreparedMessage) -> str:
        """Send one message; return the provider's message id when the backend reports one."""
        smtp = self._smtp()
        message = None
        try:
            if smtp is not None and prepared.envelope_from.isascii() and all(r.isascii() for r in prepared.recipients):
                # Straight to smtplib: Django's backend would only re-parse the addresses we already checked.
                _smtp_sendmail(smtp, prepared.envelope_from, prepared.recipients, prepared.raw)
                return ""
            message = prepared.as_email_message()
            self.connection.send_messages([message])
        except smtplib.SMTPException as exc:
            raise _smtp_error(exc) from exc
        except OSError as exc:
            raise TransportError(
                f"Connection to the mail server failed: {exc}", permanent=False, connection_lost=True
            ) from exc
        except Exception as exc:
            error = _provider_error(exc)
            if error is None:
                raise
            raise error from exc
        status = getattr(message, "anymail_status", None)
        return (status.message_id or "") if status is not None else ""
