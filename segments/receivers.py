"""Reactions to the contacts app's hooks: a contact's events (subscription changes are recorded as events too)
queue a debounced re-evaluation of that contact's tracked segments."""

from django.conf import settings
from django.core.cache import cache

from segments.models import Segment, SegmentType


def debounce_seconds() -> int:
    return getattr(settings, "SEGMENT_REEVALUATE_DEBOUNCE_SECONDS", 5)


def on_events_recorded(sender, project, events, **kwargs) -> None:
    """1. Ignore our own `segment.*` entry/exit events (they follow a re-evaluation; reacting would only repeat it).
    2. Nothing to do unless the project has a tracked dynamic segment (one indexed query per recording call).
    3. Per contact, queue one re-evaluation per debounce window: a burst of events costs one run, which reads
       the state at its end."""
    from segments.tasks import segment_contact_reevaluate_task

    contact_ids = {event.contact_id for event in events if not event.name.startswith("segment.")}
    if not contact_ids:
        return
    tracked = Segment.objects.filter(project_id=project.id, type=SegmentType.DYNAMIC, track_membership=True)
    if not tracked.exists():
        return
    delay = debounce_seconds()
    for contact_id in contact_ids:
        if cache.add(f"segments:reevaluate:{contact_id}", 1, timeout=delay):
            segment_contact_reevaluate_task.apply_async(args=[str(contact_id)], countdown=delay)
