"""What messaging's rooms say about an email message, below all of them: an address, what may go into a header
line, the size of a body, where a snippet goes in an HTML body, and the data every `email.*` event carries.

Only what more than one room needs lives here; a room's own rules stay in the room. This module imports no room,
so every room may import it (`.importlinter`, "Inside messaging").
"""

from dataclasses import dataclass

from rest_framework import serializers

from messaging.models import Email

# Bodies at most 2 MB wherever content enters (subjects: 998 characters, one header line).
MAX_BODY_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Address:
    email: str
    name: str = ""


def header_safe(value: str) -> bool:
    """True when `value` can be written into one header line: no CR, LF (which end the line) or NUL."""
    return "\r" not in value and "\n" not in value and "\0" not in value


def no_line_breaks(value: str) -> str:
    """A value written into a header (a subject, a display name): one line, no NUL."""
    if not header_safe(value):
        raise serializers.ValidationError("Must not contain line breaks or NUL characters", code="invalid_string")
    return value


def body_size(value: str) -> str:
    """A body: at most 2 MB of UTF-8 (a body past it is refused before anything scans it)."""
    if len(value) > MAX_BODY_BYTES or (
        len(value) * 4 > MAX_BODY_BYTES and len(value.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES
    ):
        raise serializers.ValidationError(
            f"Must be at most 2 MB ({MAX_BODY_BYTES:,} bytes of UTF-8)", code="max_length"
        )
    return value


def insert_before_body_end(html: str, snippet: str) -> str:
    """`snippet` just before the last `</body>`, or at the end of a body without one."""
    position = html.lower().rfind("</body")
    return html[:position] + snippet + html[position:] if position >= 0 else html + snippet


def email_event_data(email: Email, **extra) -> dict:
    """The payload every `email.*` event carries (docs/messaging.md), plus the fields of its kind."""
    return {
        "emailId": str(email.id),
        "messageId": email.message_id,
        "subject": email.subject,
        "from": email.from_email,
        "templateId": str(email.template_id) if email.template_id else None,
        "campaignId": str(email.campaign_id) if email.campaign_id else None,
        "workflowId": str(email.workflow_id) if email.workflow_id else None,
        "source": email.source,
        **extra,
    }
