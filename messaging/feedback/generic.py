"""The generic webhook for self-run MTAs: its signature and its body (docs/feedback.md has the contract).

Body: a JSON array (1 to 1000 items) of
`{id, type: delivered|bounced|complained|opened|clicked, messageId | emailId, timestamp?, bounceType?, reason?,
recipient?, link?}`; `bounceType` (`hard` or `soft`) is required for `bounced`.
"""

import json
from datetime import UTC

from django.conf import settings
from django.utils.dateparse import parse_datetime

from core.http.sanity import body_fault
from messaging.feedback.events import BOUNCED, CLICKED, COMPLAINED, DELIVERED, HARD, OPENED, SOFT, FeedbackEvent
from messaging.feedback.signatures import generic_signature_valid

PROVIDER = "generic"
TYPES = {DELIVERED, BOUNCED, COMPLAINED, OPENED, CLICKED}
MAX_EVENTS = 1000
STRING_LIMITS = {
    "id": 255,
    "messageId": 255,
    "emailId": 64,
    "timestamp": 64,
    "reason": 2000,
    "recipient": 320,
    "link": 4096,
}


class Malformed(ValueError):
    pass


def signature_valid(request) -> bool:
    return generic_signature_valid(
        secret=settings.FEEDBACK_GENERIC_SECRET,
        timestamp=request.headers.get("X-Herald-Timestamp", ""),
        signature=request.headers.get("X-Herald-Signature", ""),
        body=request.body,
        tolerance=settings.FEEDBACK_SIGNATURE_TOLERANCE,
    )


def _item(index: int, item) -> FeedbackEvent:
    if not isinstance(item, dict):
        raise Malformed(f"Item {index} is not an object")
    for key, limit in STRING_LIMITS.items():
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise Malformed(f"{index}.{key} must be a string of at most {limit} characters")
    if not item.get("id"):
        raise Malformed(f"{index}.id is required")
    if not isinstance(item.get("type"), str) or item["type"] not in TYPES:
        raise Malformed(f"{index}.type must be one of {', '.join(sorted(TYPES))}")
    if not (item.get("messageId") or item.get("emailId")):
        raise Malformed(f"{index}: messageId or emailId is required")
    bounce_type = item.get("bounceType")
    if item["type"] == BOUNCED and bounce_type not in (HARD, SOFT):
        raise Malformed(f"{index}.bounceType must be hard or soft")
    timestamp = None
    if item.get("timestamp"):
        try:
            timestamp = parse_datetime(item["timestamp"])
        except ValueError:
            timestamp = None
        if timestamp is None or timestamp.tzinfo is None:
            raise Malformed(f"{index}.timestamp must be an ISO 8601 date-time with a time zone")
        timestamp = timestamp.astimezone(UTC)
    return FeedbackEvent(
        provider=PROVIDER,
        event_id=item["id"],
        event_type=item["type"],
        kind=item["type"],
        message_id=item.get("messageId") or "",
        email_id=item.get("emailId") or "",
        recipient=item.get("recipient") or "",
        timestamp=timestamp,
        bounce_type=bounce_type if item["type"] == BOUNCED else None,
        link=item.get("link") or "",
        detail=item.get("reason") or "",
    )


def parse(body: bytes) -> list[FeedbackEvent]:
    try:
        items = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Malformed("The body is not valid JSON") from exc
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_EVENTS:
        raise Malformed(f"The body must be a JSON array of 1 to {MAX_EVENTS} events")
    fault = body_fault(items)  # a NUL or a lone surrogate, which no column can store
    if fault is not None:
        path, message, _ = fault
        raise Malformed(f"{path}: {message}")
    return [_item(index, item) for index, item in enumerate(items)]
