"""A submitted message (RFC 5322 bytes) read as the content of a send: what `POST /v1/send` would have been given.

The message is parsed with the standard library's `email` package (`policy.default`, which decodes encoded words),
and every part goes through the same checks as the fields of `/v1/send` (`messaging.sending.parse`): the sender and
the recipients' display names, `Reply-To`, the extra headers and the attachments' limits. A message that the `email`
package cannot make sense of (no single From address, no text or HTML body, an unknown charset) is `Unparseable`;
one whose parts the send rules refuse raises their `ValidationFailed`.
"""

import re
from dataclasses import dataclass, field
from email import policy
from email.contentmanager import raw_data_manager
from email.errors import MessageError
from email.header import decode_header, make_header
from email.message import EmailMessage
from email.parser import BytesParser
from typing import NamedTuple

from core.errors import ValidationFailed
from messaging.models import EmailType
from messaging.sending import parse
from messaging.sending.mime import Attachment
from messaging.sending.services import SendContent
from messaging.vocabulary import Address, header_safe

# Headers of the message that do not become extra headers of the copies: the ones the service writes itself
# (`parse.OWNED_HEADERS`: From, To, Cc, Subject, Message-ID...), the one given a field of its own (Reply-To), the
# top level's MIME headers (the copies are built again, `messaging.sending.mime`) and the trace of the client's own
# hops and checks.
_NOT_CARRIED = frozenset(
    name.lower()
    for name in (
        "Reply-To",
        "Sender",
        "Received",
        "Delivered-To",
        "X-Original-To",
        "Authentication-Results",
        "ARC-Seal",
        "ARC-Message-Signature",
        "ARC-Authentication-Results",
    )
)
# The structure is parsed with compat32 (headers kept as the raw strings they were), and the few headers read are
# then made as policy.default makes them (`headers_named`): policy.default builds a header object anew at every
# access, and walking the parts reads Content-Type dozens of times, which took three quarters of a message's parse.
_HEADERS = policy.default


class ParsedMessage(EmailMessage):
    """A message parsed with compat32 (`message_parse`), whose methods that read headers read them as compat32 keeps
    them: `EmailMessage.is_attachment` expects policy.default's header object, and `get_body` (which asks it of
    every part it passes until it finds the body) failed on a message with an attachment and no HTML part."""

    def is_attachment(self) -> bool:
        return self.get_content_disposition() == "attachment"


_PARSER = BytesParser(_class=ParsedMessage, policy=policy.compat32)


def message_parse(raw: bytes) -> ParsedMessage:
    """The structure of the message `raw`, its headers kept as raw strings (read them with `headers_named` and
    `header_mailboxes`)."""
    return _PARSER.parsebytes(raw)


_FOLD = re.compile(r"\r?\n(?=[ \t])")
# A header of plain mailboxes (`Name <a@b.c>`, `"Name, Jr." <a@b.c>`, `a@b.c`, comma-separated), in ASCII without
# encoded words, comments, groups or folding: read here to the addresses policy.default reads from it, at a tenth of
# the cost of its full parser (which was half of a message's parse). Anything else goes the full way.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
# A plain address (dot-atom @ domain name), which every parser reads the same.
ADDR_SPEC = rf"{_ATOM}(?:\.{_ATOM})*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
_PLAIN_MAILBOX = re.compile(
    rf'[ \t]*(?:(?:"(?P<quoted>[ !#-\[\]-~]*)"|(?P<name>{_ATOM}(?: {_ATOM})*))[ \t]*<(?P<angle>{ADDR_SPEC})>'
    rf"|(?P<bare>{ADDR_SPEC}))[ \t]*(?:,|\Z)"
)


class Unparseable(Exception):
    """A message the `email` package cannot read as a send (554 5.6.0)."""


@dataclass
class Submitted:
    """A submitted message as the content of a send, and the display names its To and Cc give the addresses."""

    message_id: str
    content: SendContent
    names: dict[str, str] = field(default_factory=dict)

    def recipients(self, addresses: list[str]) -> list[Address]:
        """The envelope's recipients (RCPT TO) as the send's, each with the display name the headers give it, under
        `/v1/send`'s rules for `to`."""
        return parse.parse_recipients(
            [{"email": address, "name": self.names.get(address.lower(), "")} for address in addresses]
        )


def message_read(raw: bytes, *, default_sender_name: str) -> Submitted:
    """The content of the send that the message `raw` asks for; its From name, when it has none, is
    `default_sender_name` (the project's, as for `/v1/send`)."""
    try:
        message = message_parse(raw)
        sender = _sender(message)
        subject = "".join(str(header) for header in headers_named(message, "Subject")[:1])
        body = _body(message)
        attachments = _attachments(message, body)
        names = _names(message)
        reply = _first_address(message, "Reply-To")
        message_id = "".join(str(header) for header in headers_named(message, "Message-ID")[:1]).strip()
        headers = _headers(message)
    except (MessageError, LookupError, UnicodeError, ValueError, TypeError, AttributeError, IndexError) as error:
        raise Unparseable(str(error) or type(error).__name__) from error
    if not subject:
        raise ValidationFailed.field("subject", "Required", "invalid_type", received="undefined")
    if not header_safe(subject) or len(subject) > parse.MAX_HEADER_VALUE:
        raise ValidationFailed.field(
            "subject", "One line of at most 998 characters, without NUL characters", "invalid_string"
        )
    parse.attachments_check(attachments)
    return Submitted(
        message_id=message_id,
        content=SendContent(
            subject=subject,
            body=body.html,
            text=body.text,
            sender=Address(email=sender.email, name=sender.name or default_sender_name),
            reply_to=parse.parse_reply(reply),
            type=EmailType.TRANSACTIONAL,
            headers=headers,
            attachments=attachments,
        ),
        names=names,
    )


def headers_named(message: EmailMessage, name: str) -> list:
    """Every `name` header of the message as policy.default reads it (encoded words decoded, addresses parsed)."""
    lowered = name.lower()
    return [_HEADERS.header_fetch_parse(key, value) for key, value in message.raw_items() if key.lower() == lowered]


class _Mailbox(NamedTuple):
    display_name: str
    addr_spec: str


def _plain_mailboxes(value: str) -> list[_Mailbox] | None:
    """The mailboxes of a header value of plain mailboxes only (above), or None."""
    if "=?" in value:
        return None  # an encoded word, decoded by the full parser
    found, position = [], 0
    while position < len(value):
        match = _PLAIN_MAILBOX.match(value, position)
        if match is None or match.end() == position:
            return None
        found.append(_Mailbox(match["quoted"] or match["name"] or "", match["angle"] or match["bare"]))
        position = match.end()
    return found if found and not value.rstrip().endswith(",") else None


def header_mailboxes(message: EmailMessage, name: str) -> list:
    """The addresses (`display_name`, `addr_spec`) of every `name` header, as policy.default reads them; its errors
    (ValueError and others) propagate."""
    lowered = name.lower()
    plain = [_plain_mailboxes(value) for key, value in message.raw_items() if key.lower() == lowered]
    if None not in plain:
        return [mailbox for mailboxes in plain for mailbox in mailboxes]
    return [address for header in headers_named(message, name) for address in header.addresses]


def _addresses(message: EmailMessage, name: str, field: str) -> list:
    """The addresses of every `name` header. The `email` package refuses to make an address of a display name that
    decodes to a line break (an encoded word hiding CR or LF): that is a name `/v1/send` would refuse at `field`
    (550), not a message that cannot be read."""
    try:
        return header_mailboxes(message, name)
    except ValueError:
        decoded = (
            str(make_header(decode_header(_FOLD.sub(" ", value))))
            for header_name, value in message.raw_items()
            if header_name.lower() == name.lower()
        )
        if any(not header_safe(value) for value in decoded):
            raise ValidationFailed.field(
                field, "Name must be one line of at most 255 characters, without NUL characters", "invalid_string"
            ) from None
        raise


def _sender(message: EmailMessage) -> Address:
    """The one address of the one From header, under `/v1/send`'s rules for `from` (a display name is one line)."""
    addresses = _addresses(message, "From", "from.name")
    if len(message.get_all("From", [])) != 1 or len(addresses) != 1:
        raise Unparseable("The message must have one From header with one address")
    [address] = addresses
    return parse.parse_sender({"email": address.addr_spec, "name": address.display_name})


def _first_address(message: EmailMessage, name: str) -> str:
    addresses = _addresses(message, name, "reply")
    return addresses[0].addr_spec if addresses else ""


def _names(message: EmailMessage) -> dict[str, str]:
    names = {}
    for name in ("To", "Cc"):
        for address in _addresses(message, name, "to.name"):
            names.setdefault(address.addr_spec.lower(), address.display_name)
    return names


@dataclass(frozen=True)
class _Body:
    """The HTML body, the text part as written (None without one) and the parts they were read from."""

    html: str
    text: str | None
    parts: list[EmailMessage]


def _body(message: EmailMessage) -> _Body:
    """The `text/html` part as the body and the `text/plain` part as the text alternative, each as written; a
    text-only message has no HTML and is sent as its text (its line breaks kept)."""
    html_part, text_part = message.get_body(("html",)), message.get_body(("plain",))
    if html_part is None and text_part is None:
        raise Unparseable("The message has no text or HTML body")
    html = "" if html_part is None else html_part.get_content(content_manager=raw_data_manager)
    text = None if text_part is None else text_part.get_content(content_manager=raw_data_manager).replace("\r\n", "\n")
    return _Body(html=html, text=text, parts=[part for part in (html_part, text_part) if part is not None])


def _attachments(message: EmailMessage, body: _Body) -> list[Attachment]:
    """Every leaf part but the body's: inline (with its Content-ID, for `cid:` images) or attached."""
    body_parts = {id(part) for part in body.parts}
    attachments = []
    for part in message.walk():
        if part.is_multipart() or id(part) in body_parts:
            continue
        content_id = str(part.get("Content-ID") or "").strip().strip("<>") or None
        disposition = part.get_content_disposition() or ("inline" if content_id else "attachment")
        if disposition == "inline" and content_id is None:
            disposition = "attachment"
        attachments.append(
            Attachment(
                filename=part.get_filename() or content_id or "attachment",
                content=part.get_payload(decode=True) or b"",
                content_type=part.get_content_type(),
                content_id=content_id,
                disposition=disposition,
            )
        )
    return attachments


def _headers(message: EmailMessage) -> dict[str, str]:
    """The message's other headers that `/v1/send`'s header rules allow (printable names, one line of at most 998
    characters, not one the service writes); the others are left out rather than refusing the message, since mail
    clients add headers of their own the sender never chose."""
    headers = {}
    for name, value in message.raw_items():
        lowered = name.lower()
        if lowered in parse.OWNED_HEADERS or lowered in _NOT_CARRIED or lowered.startswith("content-"):
            continue
        try:
            headers.update(parse.parse_headers({name: str(_HEADERS.header_fetch_parse(name, value))}))
        except ValidationFailed:
            continue
    return headers
