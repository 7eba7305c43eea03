"""Which recorded events count as an email's first occurrence of a kind (sent, delivered, opened, ...): the one rule
of every figure kept from the events as they are recorded, the hourly rollup (`messaging.insights.rollup`) and a
campaign's counters alike, so that each equals a recount from the email rows."""

from collections.abc import Iterator

from contacts.models import Event

# Event name -> (rollup column, payload timestamp of the occurrence, payload (key, value) that makes it count).
# Opens and clicks count at the first hit; a bounce when hard (what sets `bounced_at`; soft bounces are events
# only). Deliveries and complaints are recorded once per email by the feedback service.
EVENT_COUNTS = {
    "email.sent": ("sent", "sentAt", None),
    "email.delivery": ("delivered", "deliveredAt", None),
    "email.open": ("opened", "openedAt", ("isFirstOpen", True)),
    "email.click": ("clicked", "clickedAt", ("isFirstClick", True)),
    "email.bounce": ("bounced", "bouncedAt", ("bounceType", "hard")),
    "email.complaint": ("complained", "complainedAt", None),
    "email.failed": ("failed", None, None),
}


def counted_events(events) -> Iterator[tuple[Event, str]]:
    """(event, count) for each of `events` that is an email's first occurrence of a kind the rollup counts: what
    sets the email row's `<kind>_at`."""
    for event in events:
        kind = EVENT_COUNTS.get(event.name)
        if kind is None:
            continue
        column, _stamp_key, condition = kind
        if condition and event.data.get(condition[0]) != condition[1]:
            continue
        yield event, column
