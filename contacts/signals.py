"""The one hook other apps use to react to events, without the contacts app knowing them.

Both signals are sent after the transaction that recorded the events commits (a rolled back request announces
nothing, and receivers may enqueue Celery tasks that read the rows):

- `event_recorded(sender=Event, project, contact, event)`: once per event, tracked or system, single or bulk.
- `events_recorded(sender=Event, project, events)`: once per recording call with all its events (a list of one
  for a single event); each event has `.contact` loaded. Connect to this one for set-based work.

A receiver connects to one of the two, never both, or it sees every event twice.

- `contacts_changed(sender=Contact, project, contact_ids)`: after commit, when a single-contact write (create,
  POST /contacts, PATCH, /v1/track, /v1/send) changed contacts' email or data. Subscription changes are events
  and arrive through the two signals above. CSV imports do not send it (the periodic segment compute covers them).

A receiver's exception is logged and reaches neither the other receivers nor the request, whose write is already
committed (`core.commit.after_commit`): what a receiver would have done must also be done by periodic work (the
segment compute re-evaluates memberships; `rebuild_email_stats` recounts the stats).
"""

from django.dispatch import Signal

event_recorded = Signal()
events_recorded = Signal()
contacts_changed = Signal()
