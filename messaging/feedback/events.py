"""One provider notification about one email, in the terms Herald acts on, whichever provider sent it.

Anymail normalises each provider's payload into an `AnymailTrackingEvent`; what it leaves open is whether a bounce
was permanent (several providers report soft bounces as `bounced`), which each provider says in its own field.
"""

from dataclasses import dataclass
from datetime import datetime

from anymail.signals import AnymailTrackingEvent, EventType

DELIVERED, BOUNCED, COMPLAINED, OPENED, CLICKED = "delivered", "bounced", "complained", "opened", "clicked"
HARD, SOFT = "hard", "soft"

# Anymail's esp_name -> the provider's name in our URLs and receipts.
PROVIDERS = {
    "Amazon SES": "ses",
    "Postmark": "postmark",
    "Mailgun": "mailgun",
    "Brevo": "brevo",
    "SparkPost": "sparkpost",
    "Resend": "resend",
}

_KINDS = {
    EventType.DELIVERED: DELIVERED,
    EventType.BOUNCED: BOUNCED,
    EventType.DEFERRED: BOUNCED,  # a temporary failure: a soft bounce
    EventType.COMPLAINED: COMPLAINED,
    EventType.OPENED: OPENED,
    EventType.CLICKED: CLICKED,
}

# SparkPost bounce classes that say the address itself is bad (invalid recipient, no RCPT); the others (mailbox
# full, DNS, blocks, undetermined, ...) are worth retrying later.
_SPARKPOST_HARD_CLASSES = {"10", "30"}


def _get(data, *path):
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


# Per provider: is this `bounced` event a soft bounce?
_SOFT_BOUNCE = {
    "ses": lambda esp: _get(esp, "bounce", "bounceType") != "Permanent",
    "postmark": lambda esp: _get(esp, "Type") == "SoftBounce",
    "brevo": lambda esp: _get(esp, "event") == "soft_bounce",
    "sparkpost": lambda esp: str(_get(esp, "msys", "message_event", "bounce_class")) not in _SPARKPOST_HARD_CLASSES,
    "resend": lambda esp: _get(esp, "data", "bounce", "type") not in (None, "Permanent"),
    # Mailgun's temporary failures already arrive as `deferred`.
    "mailgun": lambda esp: False,
}


@dataclass
class FeedbackEvent:
    provider: str
    event_id: str
    event_type: str  # as the provider (or Anymail) named it, for the receipt
    kind: str | None  # DELIVERED ... CLICKED, or None for what Herald does not act on
    message_id: str = ""  # the provider's message id, or our Message-ID
    email_id: str = ""  # our email id (the generic webhook)
    recipient: str = ""
    timestamp: datetime | None = None
    bounce_type: str | None = None
    link: str = ""
    detail: str = ""


def from_anymail(*, esp_name: str, event: AnymailTrackingEvent) -> FeedbackEvent:
    provider = PROVIDERS[esp_name]
    kind = _KINDS.get(event.event_type)
    bounce_type = None
    if kind == BOUNCED:
        soft = event.event_type == EventType.DEFERRED or _SOFT_BOUNCE[provider](event.esp_event)
        bounce_type = SOFT if soft else HARD
    return FeedbackEvent(
        provider=provider,
        event_id=event.event_id,
        event_type=str(event.event_type),
        kind=kind,
        message_id=event.message_id or "",
        recipient=event.recipient or "",
        timestamp=event.timestamp,
        bounce_type=bounce_type,
        link=event.click_url or "",
        detail=event.mta_response or event.description or "",
    )
