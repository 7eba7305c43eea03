"""Parsing of the polymorphic parts of a send request (`to`, `from`, `headers`, `attachments`), each failure a
422 naming the exact field (`to.2.email`, `headers.X-A`, `attachments.0.content`)."""

import base64
import binascii
import re
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from core.errors import ValidationFailed
from core.json import json_type
from messaging.sending.mime import Attachment
from messaging.vocabulary import Address, header_safe

_email_validator = EmailValidator()
MAX_RECIPIENTS = 100
MAX_ATTACHMENTS = 10
MAX_HEADER_VALUE = 998
# Headers the service writes itself; a caller may not replace them.
OWNED_HEADERS = frozenset(
    name.lower()
    for name in (
        "From",
        "To",
        "Cc",
        "Bcc",
        "Subject",
        "Message-ID",
        "Date",
        "MIME-Version",
        "Content-Type",
        "Content-Transfer-Encoding",
        "DKIM-Signature",
        "Return-Path",
    )
)
_HEADER_NAME = re.compile(r"^[!-9;-~]+$")  # RFC 5322 field name: printable ASCII except colon


def valid_email(value: str) -> bool:
    try:
        _email_validator(value)
    except ValidationError:
        return False
    return True


def _address(value: Any, field: str) -> Address:
    if isinstance(value, str):
        email, name = value.strip(), ""
    elif isinstance(value, dict):
        email, name = value.get("email"), value.get("name") or ""
        if not isinstance(email, str):
            raise ValidationFailed.field(
                f"{field}.email",
                "Required" if email is None else "Expected string",
                "invalid_type",
                received=json_type(email) if email is not None else "undefined",
            )
        if not isinstance(name, str):
            raise ValidationFailed.field(f"{field}.name", "Expected string", "invalid_type", received=json_type(name))
        email = email.strip()
        field = f"{field}.email"
    else:
        raise ValidationFailed.field(
            field, "Expected an email address or {name, email}", "invalid_type", received=json_type(value)
        )
    if not header_safe(name) or len(name) > 255:
        raise ValidationFailed.field(
            field.removesuffix(".email") + ".name",
            "Name must be one line of at most 255 characters, without NUL characters",
            "invalid_string",
        )
    if len(email) > 320 or not valid_email(email):
        raise ValidationFailed.field(field, "Invalid email", "invalid_string")
    return Address(email=email, name=name.strip())


def parse_recipients(value: Any) -> list[Address]:
    """`to`: an address, `{name, email}`, or an array of either (1 to 100). Every one is checked before any
    is used, so a bad address among several rejects the whole request."""
    if value is None:
        raise ValidationFailed.field("to", "Required", "invalid_type", received="undefined")
    if isinstance(value, list):
        if not value:
            raise ValidationFailed.field("to", "At least one recipient is required", "too_small")
        if len(value) > MAX_RECIPIENTS:
            raise ValidationFailed.field("to", f"At most {MAX_RECIPIENTS} recipients per request", "too_big")
        return [_address(item, f"to.{index}") for index, item in enumerate(value)]
    return [_address(value, "to")]


def parse_sender(value: Any) -> Address | None:
    return None if value is None else _address(value, "from")


def parse_reply(value: Any) -> str:
    if value is None or value == "":
        return ""
    return _address(value, "reply").email


def parse_headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed.field("headers", "Expected object", "invalid_type", received=json_type(value))
    headers = {}
    for name, header_value in value.items():
        path = f"headers.{name}"
        if not _HEADER_NAME.match(name) or len(name) > 100:
            raise ValidationFailed.field(
                path, "Header names are printable ASCII without spaces, colons or line breaks", "invalid_string"
            )
        if name.lower() in OWNED_HEADERS:
            raise ValidationFailed.field(
                path, f"The {name} header is set by the service and cannot be overridden", "custom"
            )
        if not isinstance(header_value, str):
            raise ValidationFailed.field(path, "Expected string", "invalid_type", received=json_type(header_value))
        if not header_safe(header_value):
            raise ValidationFailed.field(
                path, "Header values cannot contain line breaks or NUL characters", "invalid_string"
            )
        if len(header_value) > MAX_HEADER_VALUE:
            raise ValidationFailed.field(path, f"Header values are at most {MAX_HEADER_VALUE} characters", "too_big")
        headers[name] = header_value
    return headers


def _string(item: dict, key: str, path: str, *, required: bool) -> str | None:
    value = item.get(key)
    if value is None:
        if required:
            raise ValidationFailed.field(f"{path}.{key}", "Required", "invalid_type", received="undefined")
        return None
    if not isinstance(value, str):
        raise ValidationFailed.field(f"{path}.{key}", "Expected string", "invalid_type", received=json_type(value))
    return value


def parse_attachments(value: Any) -> list[Attachment]:
    """Attachment items `{filename, content (base64), contentType, contentId?, disposition?}`, within the limits of
    `attachment_check` and `attachments_check_total`."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationFailed.field("attachments", "Expected array", "invalid_type", received=json_type(value))
    attachments_check_count(len(value))
    attachments = []
    for index, item in enumerate(value):
        path = f"attachments.{index}"
        if not isinstance(item, dict):
            raise ValidationFailed.field(path, "Expected object", "invalid_type", received=json_type(item))
        filename = _string(item, "filename", path, required=True)
        content_type = _string(item, "contentType", path, required=False) or "application/octet-stream"
        disposition = _string(item, "disposition", path, required=False) or "attachment"
        content_id = _string(item, "contentId", path, required=disposition == "inline")
        attachment = Attachment(filename, b"", content_type, content_id, disposition)
        attachment_check(attachment, path)
        encoded = _string(item, "content", path, required=True)
        try:
            content = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValidationFailed.field(f"{path}.content", "Content must be valid base64", "invalid_string") from None
        attachments.append(replace(attachment, content=content))
        attachments_check_total(attachments)
    return attachments


def attachments_check(attachments: list[Attachment]) -> None:
    """The limits of `/v1/send`'s attachments for attachments that came decoded (a message submitted over SMTP)."""
    attachments_check_count(len(attachments))
    for index, attachment in enumerate(attachments):
        attachment_check(attachment, f"attachments.{index}")
    attachments_check_total(attachments)


def attachments_check_count(count: int) -> None:
    if count > MAX_ATTACHMENTS:
        raise ValidationFailed.field("attachments", f"At most {MAX_ATTACHMENTS} attachments", "too_big")


def attachment_check(attachment: Attachment, path: str) -> None:
    """One attachment's names: a filename that fits a quoted header parameter, a MIME type, an inline attachment's
    content id."""
    filename = attachment.filename
    if not 1 <= len(filename) <= 255 or not header_safe(filename) or '"' in filename:
        raise ValidationFailed.field(
            f"{path}.filename",
            "1 to 255 characters without quotes, line breaks or NUL characters",
            "invalid_string",
        )
    if not re.match(r"^[\w.+-]+/[\w.+-]+$", attachment.content_type):
        raise ValidationFailed.field(
            f"{path}.contentType", "Expected a MIME type such as application/pdf", "invalid_string"
        )
    if attachment.disposition not in ("attachment", "inline"):
        raise ValidationFailed.field(f"{path}.disposition", "Expected attachment or inline", "invalid_enum_value")
    if attachment.disposition == "inline" and attachment.content_id is None:
        raise ValidationFailed.field(f"{path}.contentId", "Required", "invalid_type", received="undefined")
    if attachment.content_id is not None and not re.match(r"^[\w.@+-]{1,200}$", attachment.content_id):
        raise ValidationFailed.field(f"{path}.contentId", "Letters, digits and . @ + - _ only", "invalid_string")


def attachments_check_total(attachments: list[Attachment]) -> None:
    if sum(len(attachment.content) for attachment in attachments) > settings.SEND_ATTACHMENTS_MAX_BYTES:
        raise ValidationFailed.field(
            "attachments",
            f"Attachments are at most {settings.SEND_ATTACHMENTS_MAX_BYTES} bytes in total (decoded)",
            "too_big",
        )
