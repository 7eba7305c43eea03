"""Reactions to the contacts app's hooks: a contact's events (subscription changes are recorded as events too)
queue a debounced re-evaluation of that contact's tracked segments."""

import time

from django.conf import settings
from django.core.cache import cache

from segments.models import Segment, SegmentType

# project id -> (has tracked segments, valid until): /v1/track records an event per request, and asking the
# database each time would add a query to the hottest endpoint. A new tracked segment is seen within
# TRACKED_MEMO_SECONDS in every process (and its first compute catches up on anything before that).
TRACKED_MEMO_SECONDS = 5
_tracked_memo: dict = {}


def forget_tracked(project_id) -> None:
    """This process saw a segment of the project change: ask the database on the next event."""
    _tracked_memo.pop(project_id, None)


def _has_tracked_segments(project_id) -> bool:
    now = time.monotonic()
    memo = _tracked_memo.get(project_id)
    if memo is not None and memo[1] > now:
        return memo[0]
    found = Segment.objects.filter(project_id=project_id, type=SegmentType.DYNAMIC, track_membership=True).exists()
    _tracked_memo[project_id] = (found, now + TRACKED_MEMO_SECONDS)
    return found


def debounce_seconds() -> int:
    return settings.SEGMENT_REEVALUATE_DEBOUNCE_SECONDS


def on_events_recorded(sender, project, events, **kwargs) -> None:
    """1. Ignore our own `segment.*` entry/exit events (they follow a re-evaluation; reacting would only repeat it).
    2. Nothing to do unless the project has a tracked dynamic segment (memoised per process for a few seconds).
    3. Per contact, queue one re-evaluation per debounce window: a burst of events costs one run, which reads
       the state at its end."""
    contact_ids = {event.contact_id for event in events if not event.name.startswith("segment.")}
    if not contact_ids:
        return
    _queue_reevaluation(project.id, contact_ids)


def on_contacts_changed(sender, project_id, contact_ids, **kwargs) -> None:
    """A contact was created or its email or data changed: the same debounced re-evaluation as for events."""
    _queue_reevaluation(project_id, set(contact_ids))


def _queue_reevaluation(project_id, contact_ids: set) -> None:
    from segments.tasks import segment_contact_reevaluate_task

    if not _has_tracked_segments(project_id):
        return
    delay = debounce_seconds()
    for contact_id in contact_ids:
        if cache.add(f"segments:reevaluate:{contact_id}", 1, timeout=delay):
            segment_contact_reevaluate_task.apply_async(args=[str(contact_id)], countdown=delay)
