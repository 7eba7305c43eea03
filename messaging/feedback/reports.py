"""Delivery and abuse reports received by mail at a bounce address (`messaging.feedback.returnpath`), acted on as a
provider's webhook would be: the same `FeedbackEvent`, the same `feedback_record` (docs/smtp.md, "Bounces and
complaints without a provider").

1. An abuse report (RFC 5965 ARF: `multipart/report; report-type=feedback-report`) is a complaint.
2. Any other message goes to Mailman's bounce detectors (flufl.bounce): RFC 3464 delivery status notifications and
   the common forms that are not (Postfix, qmail, Exim, Exchange, ...). A permanent failure (5.x.x) is a hard
   bounce, a transient one (4.x.x, a "still trying" warning) a soft bounce; a message in which no detector finds a
   failure is no report (an auto-reply, a delivery success) and changes nothing.
3. The email is the one the bounce address names, never one the report's text claims. The receipt's key is the
   report's own Message-ID (or, without one, a digest of the report), so a report delivered twice acts once.
"""

import email
import hashlib
import logging
import uuid
from email import policy
from email.message import Message

from flufl.bounce import all_failures

from messaging.feedback.events import BOUNCED, COMPLAINED, HARD, SOFT, FeedbackEvent
from messaging.feedback.services import feedback_record
from messaging.models import WebhookReceipt

logger = logging.getLogger(__name__)

PROVIDER = "smtp"


def _is_arf(message: Message) -> bool:
    return message.get_content_type() == "multipart/report" and (
        (message.get_param("report-type") or "").lower() == "feedback-report"
    )


def _part_fields(message: Message, content_type: str) -> list[tuple[str, str]]:
    """The `name: value` fields of the report part of that type (message/feedback-report, message/delivery-status);
    Python's parser reads them as a list of header blocks."""
    fields = []
    for part in message.walk():
        if part.get_content_type() != content_type:
            continue
        payload = part.get_payload()
        blocks = payload if isinstance(payload, list) else [email.message_from_string(str(payload))]
        for block in blocks:
            fields.extend((name.lower(), str(value)) for name, value in block.items())
    return fields


def _kind(message: Message) -> tuple[str, str | None, str, str] | None:
    """(kind, bounce type, type for the receipt, detail) of a report, or None when it reports no failure."""
    if _is_arf(message):
        fields = dict(_part_fields(message, "message/feedback-report"))
        detail = " ".join(f"{name}: {fields[name]}" for name in ("feedback-type", "user-agent") if name in fields)
        return COMPLAINED, None, "arf", detail
    try:
        temporary, permanent = all_failures(message)
    except Exception:  # a detector that cannot read this message: it reports nothing we could act on
        logger.warning("The bounce detectors could not read a report", exc_info=True)
        return None
    if not (temporary or permanent):
        return None
    fields = _part_fields(message, "message/delivery-status")
    detail = "; ".join(value for name, value in fields if name in ("status", "diagnostic-code"))
    if permanent:
        return BOUNCED, HARD, "dsn", detail or "permanent failure"
    return BOUNCED, SOFT, "dsn", detail or "temporary failure"


def report_record(*, email_id: uuid.UUID, raw: bytes) -> WebhookReceipt | None:
    """Act on a report received for `email_id` (read from its bounce address). The receipt says what was done (its
    outcome and detail); None when the report was acted on before, or reports no failure."""
    message = email.message_from_bytes(raw, policy=policy.compat32)
    found = _kind(message)
    if found is None:
        logger.info("A message to the bounce address of email %s reports no failure; ignored", email_id)
        return None
    kind, bounce_type, event_type, detail = found
    own_id = (message.get("Message-ID") or "").strip()
    key = own_id or "sha256:" + hashlib.sha256(raw).hexdigest()
    return feedback_record(
        event=FeedbackEvent(
            provider=PROVIDER,
            event_id=f"{email_id}:{key}",
            event_type=event_type,
            kind=kind,
            email_id=str(email_id),
            bounce_type=bounce_type,
            detail=detail[:2000],
        )
    )
