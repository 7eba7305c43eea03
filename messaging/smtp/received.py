"""What a message received for a project's domain becomes (docs/smtp.md, "Inbound mail"): the sender as a contact,
an `email.received` event on it (which the activity feed lists and workflows start on, as any recorded event), and
one unit of the project's `inbound` billing category.

`received_read` reads the message once; `message_receive` writes it for one project, in one transaction. A message
to the domains of two projects is written once for each, with only that project's recipients in `to`.
"""

import logging
from dataclasses import dataclass
from email.contentmanager import raw_data_manager
from email.header import decode_header, make_header
from email.message import EmailMessage

from django.db import transaction
from django.utils import timezone

from accounts.billing import usage
from accounts.billing.models import Category
from accounts.models import Project
from contacts.models import Event
from contacts.services import event_record
from contacts.upsert import contact_upsert
from messaging.smtp.message import header_mailboxes, headers_named, message_parse

logger = logging.getLogger(__name__)

EVENT = "email.received"
# Each of the text and the HTML body is kept up to this many bytes (UTF-8); the event says `truncated` when cut.
BODY_LIMIT = 256 * 1024
# A stored address longer than a contact's email can be is no address.
_ADDRESS_MAX = 320


class Unreadable(ValueError):
    """The message has no sender address Herald could make a contact of."""


@dataclass(frozen=True)
class ReceivedMessage:
    sender: str
    sender_name: str
    # The event's data without `to` (the recipients are each project's own) and without the checks' results.
    data: dict


def _addresses(message: EmailMessage, header: str) -> list[tuple[str, str]]:
    """(display name, address) of each address of a header; a header Python cannot read gives none."""
    try:
        found = header_mailboxes(message, header)
        return [(address.display_name, address.addr_spec) for address in found if "@" in address.addr_spec]
    except (IndexError, ValueError, TypeError, AttributeError):
        return []


def _valid_address(address: str) -> bool:
    local, at, host = address.rpartition("@")
    return bool(local and at and host) and len(address) <= _ADDRESS_MAX and not any(c.isspace() for c in address)


def _cut(text: str) -> tuple[str, bool]:
    encoded = text.encode("utf-8", "replace")
    if len(encoded) <= BODY_LIMIT:
        return text, False
    return encoded[:BODY_LIMIT].decode("utf-8", "ignore"), True


def _body(message: EmailMessage, subtype: str) -> str:
    try:
        part = message.get_body((subtype,))
        if part is None or part.get_content_type() != f"text/{subtype}":
            return ""
        # Lines end as they arrived (CRLF on the wire); stored text ends them in LF, as the send path's does.
        return part.get_content(content_manager=raw_data_manager).replace("\r\n", "\n")
    except (LookupError, ValueError, TypeError, AttributeError, AssertionError):
        # An unknown charset or a broken part: the payload as text, replacing what does not decode.
        payload = part.get_payload(decode=True) if part is not None else None
        return payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""


def _attachments(message: EmailMessage) -> list[dict]:
    found = []
    try:
        parts = list(message.iter_attachments())
    except (TypeError, AttributeError):  # not multipart
        parts = []
    for part in parts:
        payload = part.get_payload(decode=True)
        found.append(
            {
                "filename": _filename(part),
                "contentType": part.get_content_type(),
                "size": len(payload) if isinstance(payload, bytes) else 0,
            }
        )
    return found


def _filename(part: EmailMessage) -> str:
    # compat32 leaves an encoded word in a filename as written; policy.default decodes it, as mail clients do.
    name = part.get_filename() or ""
    try:
        return str(make_header(decode_header(name))) if "=?" in name else name
    except (LookupError, UnicodeError, ValueError):
        return name


def _header(message: EmailMessage, name: str) -> str:
    try:
        return "".join(str(header) for header in headers_named(message, name)[:1]).strip()
    except (IndexError, ValueError, TypeError):
        return ""


def received_read(*, raw: bytes, mail_from: str) -> ReceivedMessage:
    """The sender and the event data of a received message. The sender is the `From` header's address, or the
    envelope sender when the header has none; `Unreadable` when neither is an address. The structure is parsed with
    compat32 and only the headers read are made as policy.default makes them (`messaging.smtp.message`), the body
    and attachments read from it: the same data at a fraction of policy.default's cost."""
    message = message_parse(raw)
    authors = [(name, address) for name, address in _addresses(message, "From") if _valid_address(address)]
    if authors:
        sender_name, sender = authors[0]
    elif _valid_address(mail_from):
        sender_name, sender = "", mail_from
    else:
        raise Unreadable("no sender address")
    text, text_cut = _cut(_body(message, "plain"))
    html, html_cut = _cut(_body(message, "html"))
    data = {
        "messageId": _header(message, "Message-ID"),
        "from": sender.lower(),
        "fromName": sender_name,
        "cc": [address for _, address in _addresses(message, "Cc")],
        "subject": _header(message, "Subject"),
        "text": text,
        "html": html,
        "inReplyTo": _header(message, "In-Reply-To"),
        "references": _header(message, "References").split(),
        "attachments": _attachments(message),
    }
    if text_cut or html_cut:
        data["truncated"] = True
    return ReceivedMessage(sender=sender.lower(), sender_name=sender_name, data=data)


def inbound_allowed(*, project: Project) -> bool:
    """Whether the project's `inbound` category has room for one more message this month."""
    allowance = usage.allowance_read(project=project, category=Category.INBOUND, now=timezone.now())
    return not allowance.exceeded_by(1)


def message_receive(*, project: Project, received: ReceivedMessage, recipients: list[str], checks: dict) -> Event:
    """Record a received message for `project`: its sender as a contact (a new one subscribed; an existing one's
    subscription unchanged), the `email.received` event with `recipients` as `to` and the `checks` (spf, dkim,
    dmarc), and one unit of the `inbound` category, in one transaction; the event is announced after the commit."""
    now = timezone.now()
    data = {**received.data, "to": recipients, **checks}
    with transaction.atomic():
        allowance = usage.allowance_read(project=project, category=Category.INBOUND, now=now)
        upsert = contact_upsert(project=project, email=received.sender, new_subscribed=True, source="inbound")
        event = event_record(project=project, contact=upsert.contact, name=EVENT, data=data)
        usage.usage_add(allowance, 1)
        usage.usage_warn(allowance, 1, now=now)
    return event
