"""The contact upsert: create the contact of an email, or merge a request's data into it.

One rule on every path (POST /contacts, /v1/track, /v1/send, static segments):

1. The request's `data` goes through `data_rules`; the new data is `DataChanges.apply` of what the contact holds,
   merged in Python on every database.
2. A missing contact is inserted with `subscribed`, or `new_subscribed` when the request does not say (true for
   POST /contacts and /v1/track, false for /v1/send).
3. An existing contact is written only when its data changed; its subscription changes only through
   `contact_subscription_set`, which records the event. A contact created or changed emits `contacts_changed`.
4. Concurrent upserts of one contact merge one after the other, and never insert the same email twice.

Two implementations, chosen once by `upsert_path()`:

- `PortableUpsert`, any database, in a transaction: lock the row (`SELECT ... FOR UPDATE`), insert or merge, save
  what changed.
- `PostgresUpsert`, the fast path: read the row without a lock or a transaction, merge, then write the contact,
  together with the rows that depend on it (the tracked event, the email of a send), in one statement that applies
  only while the row is still the version read (`xmin`) or still absent. When another request changed, created or
  deleted the contact in between, that statement writes nothing and the upsert is done again in a transaction.
  Two round trips and no BEGIN/COMMIT; one for a tracked event without data to store, which changes nothing of an
  existing contact and so needs no read to merge.
"""

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import Model
from django.utils import timezone

from accounts.models import Project
from contacts.data_rules import DataChanges, data_rules
from contacts.models import Contact, Event
from contacts.services import (
    contact_changed_announce,
    contact_subscription_set,
    event_record,
    events_announce,
    normalize_email,
)
from core.db import GuardedWrite, fetchone_prepared, mark_saved

__all__ = [
    "PendingUpsert",
    "PortableUpsert",
    "PostgresUpsert",
    "TrackResult",
    "UpsertResult",
    "contact_upsert",
    "contact_upsert_guarded",
    "contact_upsert_read",
    "event_track",
    "upsert_path",
]


@dataclass
class UpsertResult:
    contact: Contact
    created: bool
    changed: bool
    # The request's data variables (persistent and `persistent: false` values), for templates and event data.
    variables: dict

    @property
    def existed(self) -> bool:
        return not self.created


@dataclass
class PendingUpsert:
    """A contact's upsert decided from a read (`contact_upsert_read`), written through `contact_upsert_guarded`."""

    # The contact as it will be once written: its id (new or stored), subscription and merged data.
    contact: Contact
    outcome: str  # "created", "updated" or "unchanged"
    variables: dict  # as `UpsertResult.variables`
    version: str | None  # the row version read; None when there was no row


@dataclass
class TrackResult:
    contact: Contact
    event: Event
    created: bool


class PortableUpsert:
    """Lock, merge, save: any database. Runs in the caller's transaction, or in its own when there is none."""

    def read(self, *, project: Project, email: str, data: dict | None, new_subscribed: bool) -> PendingUpsert | None:
        """None: without row versions a read cannot guard a later write (callers take `upsert` in a transaction)."""
        return None

    def upsert(
        self,
        *,
        project: Project,
        email: str,
        subscribed: bool | None,
        data: dict | None,
        new_subscribed: bool,
        source: str,
    ) -> UpsertResult:
        email = normalize_email(email)
        changes = data_rules(data)
        with transaction.atomic(savepoint=False):
            contact = Contact.objects.select_for_update().filter(project=project, email=email).first()
            if contact is None:
                contact = Contact(
                    project=project,
                    email=email,
                    subscribed=new_subscribed if subscribed is None else subscribed,
                    data=changes.apply({}),
                )
                if _insert_if_absent(contact):
                    contact_changed_announce(project_id=project.id, contact_id=contact.id)
                    return UpsertResult(contact=contact, created=True, changed=True, variables=changes.variables)
                # Inserted concurrently by another request since our SELECT: continue as an update of that row.
                contact = Contact.objects.select_for_update().get(project=project, email=email)
            contact.project = project
            fields = []
            new_data = changes.apply(contact.data)
            if new_data != contact.data:
                contact.data = new_data
                fields.append("data")
            if contact_subscription_set(contact=contact, subscribed=subscribed, source=source, save=False):
                fields.append("subscribed")
            if fields:
                contact.updated_at = timezone.now()
                contact.save(update_fields=[*fields, "updated_at"])
            if "data" in fields:
                contact_changed_announce(project_id=project.id, contact_id=contact.id)
        return UpsertResult(contact=contact, created=False, changed=bool(fields), variables=changes.variables)

    def track(
        self, *, project: Project, email: str, name: str, subscribed: bool | None, data: dict | None
    ) -> TrackResult:
        with transaction.atomic():
            upsert = PortableUpsert.upsert(
                self,
                project=project,
                email=email,
                subscribed=subscribed,
                data=data,
                new_subscribed=True,
                source="track",
            )
            event = event_record(project=project, contact=upsert.contact, name=name, data=upsert.variables)
        return TrackResult(contact=upsert.contact, event=event, created=upsert.created)


def _insert_if_absent(contact: Contact) -> bool:
    """Insert a new contact unless its email exists by now (a concurrent insert): True when inserted."""
    contact.created_at = contact.updated_at = timezone.now()
    try:
        with transaction.atomic():
            contact.save(force_insert=True)
        return True
    except IntegrityError:
        return False


# The fast path's two statements. The write locks the row only if it is still the version read, inserts it only if
# there was none (`ON CONFLICT DO NOTHING`: a concurrent insert wins), and inserts the dependent rows only when one
# of the two happened; it returns the contact's id, or nothing when it wrote nothing.
_PG_READ = (
    "SELECT id, subscribed, snoozed_until, data, created_at, updated_at, xmin::text FROM contacts_contact "
    "WHERE project_id = %s AND email = %s"
)
_PG_GUARDED_UPSERT = """
WITH existing AS (
    SELECT id FROM contacts_contact
    WHERE project_id = %(project)s AND email = %(email)s AND xmin::text = %(version)s::text FOR UPDATE
), inserted AS (
    INSERT INTO contacts_contact (id, project_id, email, subscribed, snoozed_until, data, created_at, updated_at)
    SELECT %(id)s, %(project)s, %(email)s, %(subscribed)s, NULL, %(data)s::jsonb, %(now)s, %(now)s
    WHERE %(version)s::text IS NULL
    ON CONFLICT (project_id, email) DO NOTHING
    RETURNING id
), updated AS (
    UPDATE contacts_contact AS c SET data = %(data)s::jsonb, updated_at = %(now)s
    FROM existing AS e WHERE c.id = e.id AND %(changed)s
), result AS (
    SELECT id FROM inserted UNION ALL SELECT id FROM existing
)"""
# /v1/track without data to store changes nothing of an existing contact: one statement inserts the contact if it
# is absent and the event for whichever row is there, with no read first. KEY SHARE keeps a concurrent delete from
# removing the contact under its new event; nothing returned means a concurrent insert won, as above.
_PG_TRACK_UNCHANGED = """
WITH existing AS (
    SELECT id FROM contacts_contact WHERE project_id = %(project)s AND email = %(email)s FOR KEY SHARE
), inserted AS (
    INSERT INTO contacts_contact (id, project_id, email, subscribed, snoozed_until, data, created_at, updated_at)
    SELECT %(id)s, %(project)s, %(email)s, TRUE, NULL, '{}'::jsonb, %(now)s, %(now)s
    WHERE NOT EXISTS (SELECT 1 FROM existing)
    ON CONFLICT (project_id, email) DO NOTHING
    RETURNING id
), result AS (
    SELECT id, TRUE AS created FROM inserted UNION ALL SELECT id, FALSE FROM existing
), event AS (
    INSERT INTO contacts_event (id, project_id, contact_id, name, email_id, data, created_at)
    SELECT %(event_id)s, %(project)s, id, %(name)s, NULL, %(data)s::jsonb, %(now)s FROM result
)
SELECT id, created FROM result
"""
_CONTACT_FIELDS = ("id", "project_id", "email", "subscribed", "snoozed_until", "data", "created_at", "updated_at")


class PostgresUpsert(PortableUpsert):
    """Read, merge, then one guarded write; the portable path when the guard fails."""

    def read(self, *, project: Project, email: str, data: dict | None, new_subscribed: bool) -> PendingUpsert:
        return self._read(project=project, email=email, changes=data_rules(data), new_subscribed=new_subscribed)

    def _read(self, *, project: Project, email: str, changes: DataChanges, new_subscribed: bool) -> PendingUpsert:
        email = normalize_email(email)
        row = fetchone_prepared(_PG_READ, [project.id, email])
        now = timezone.now()
        if row is None:
            contact = Contact(
                id=uuid.uuid4(), project=project, email=email, subscribed=new_subscribed, data=changes.apply({})
            )
            contact.created_at = contact.updated_at = now
            return PendingUpsert(contact=contact, outcome="created", variables=changes.variables, version=None)
        contact_id, subscribed, snoozed_until, stored, created_at, updated_at, version = row
        stored = json.loads(stored) if isinstance(stored, str) else stored  # text without server-side binding
        merged = changes.apply(stored)
        contact = Contact.from_db(
            connection.alias,
            _CONTACT_FIELDS,
            (contact_id, project.id, email, subscribed, snoozed_until, merged, created_at, updated_at),
        )
        contact.project = project
        outcome = "unchanged" if merged == stored else "updated"
        if outcome == "updated":
            contact.updated_at = now
        return PendingUpsert(contact=contact, outcome=outcome, variables=changes.variables, version=version)

    def guarded(self, pending: PendingUpsert) -> GuardedWrite:
        """`contact_upsert_guarded`: the contact's write as the guard of one statement."""
        contact = pending.contact
        params = {
            "project": contact.project_id,
            "email": contact.email,
            "version": pending.version,
            "id": contact.id,
            "subscribed": contact.subscribed,
            "data": json.dumps(contact.data),
            "now": contact.updated_at,
            "changed": pending.outcome == "updated",
        }

        def written():
            mark_saved([contact])
            if pending.outcome != "unchanged":
                contact_changed_announce(project_id=contact.project_id, contact_id=contact.id)

        return GuardedWrite(_PG_GUARDED_UPSERT, params, guard="result", written=[written])

    def write(self, pending: PendingUpsert, *, dependent: Sequence[Model] = ()) -> bool:
        """The contact, and its `dependent` rows (the tracked event), in one guarded statement: whether it applied."""
        write = self.guarded(pending)
        if dependent:
            write.insert(dependent)
        return write.run()

    def upsert(
        self,
        *,
        project: Project,
        email: str,
        subscribed: bool | None,
        data: dict | None,
        new_subscribed: bool,
        source: str,
    ) -> UpsertResult:
        pending = self.read(
            project=project, email=email, data=data, new_subscribed=new_subscribed if subscribed is None else subscribed
        )
        if not self.write(pending):
            return super().upsert(
                project=project,
                email=email,
                subscribed=subscribed,
                data=data,
                new_subscribed=new_subscribed,
                source=source,
            )
        contact, created = pending.contact, pending.outcome == "created"
        # A subscription change is its own UPDATE and event, after the write (a new contact records none).
        resubscribed = not created and contact_subscription_set(contact=contact, subscribed=subscribed, source=source)
        return UpsertResult(
            contact=contact,
            created=created,
            changed=pending.outcome != "unchanged" or bool(resubscribed),
            variables=pending.variables,
        )

    def track(
        self, *, project: Project, email: str, name: str, subscribed: bool | None, data: dict | None
    ) -> TrackResult:
        # A subscription change (its event recorded by `contact_subscription_set`), or a lost race: the portable path.
        if subscribed is None:
            changes = data_rules(data)
            if changes.empty:
                tracked = self._track_unchanged(project=project, email=email, name=name, variables=changes.variables)
                if tracked is not None:
                    return tracked
            else:
                pending = self._read(project=project, email=email, changes=changes, new_subscribed=True)
                contact = pending.contact
                event = Event(
                    project=project, contact=contact, name=name, data=pending.variables, created_at=timezone.now()
                )
                if self.write(pending, dependent=[event]):
                    events_announce(project=project, events=[event])
                    return TrackResult(contact=contact, event=event, created=pending.outcome == "created")
        return super().track(project=project, email=email, name=name, subscribed=subscribed, data=data)

    def _track_unchanged(self, *, project: Project, email: str, name: str, variables: dict) -> TrackResult | None:
        """`_PG_TRACK_UNCHANGED`: the tracked contact (created, or as far as its id, the rest read on access) and
        event, or None when a concurrent insert won and nothing was written."""
        email, now = normalize_email(email), timezone.now()
        event = Event(project=project, name=name, data=variables, created_at=now)
        params = {"project": project.id, "email": email, "id": uuid.uuid4(), "now": now}
        params.update(event_id=event.id, name=name, data=json.dumps(variables))
        row = fetchone_prepared(_PG_TRACK_UNCHANGED, params)
        if row is None:
            return None
        contact_id, created = row
        if created:
            contact = Contact(id=contact_id, project=project, email=email, subscribed=True, data={})
            contact.created_at = contact.updated_at = now
            contact_changed_announce(project_id=project.id, contact_id=contact_id)
        else:
            contact = Contact.from_db(connection.alias, ("id", "project_id", "email"), (contact_id, project.id, email))
            contact.project = project
        event.contact = contact
        mark_saved([contact, event])
        events_announce(project=project, events=[event])
        return TrackResult(contact=contact, event=event, created=created)


_PORTABLE = PortableUpsert()
_POSTGRESQL = PostgresUpsert()


def upsert_path() -> PortableUpsert:
    """The implementation for this database: the one place the upsert looks at the vendor."""
    return _POSTGRESQL if connection.vendor == "postgresql" else _PORTABLE


def contact_upsert(
    *,
    project: Project,
    email: str,
    subscribed: bool | None = None,
    data: dict | None = None,
    new_subscribed: bool = True,
    source: str,
) -> UpsertResult:
    """Create the contact of `email` or update it, applying the data rules; the one upsert of every path."""
    return upsert_path().upsert(
        project=project, email=email, subscribed=subscribed, data=data, new_subscribed=new_subscribed, source=source
    )


def contact_upsert_read(
    *, project: Project, email: str, data: dict | None, new_subscribed: bool = True
) -> PendingUpsert | None:
    """The first half of a guarded upsert without a subscription change: read the contact and apply the data rules
    to what it holds, writing nothing. None where the database has no guarded write (the caller then takes
    `contact_upsert` in a transaction)."""
    return upsert_path().read(project=project, email=email, data=data, new_subscribed=new_subscribed)


def contact_upsert_guarded(pending: PendingUpsert) -> GuardedWrite:
    """The second half: the write of `pending` as the guard of one statement (`core.db.GuardedWrite`) that applies
    only if the contact is still as read. The caller adds the rows that depend on the contact (the email of a send,
    with its usage count) and runs it; False from `run`, with nothing written, when the contact changed, was deleted
    or was created meanwhile (the caller then takes `contact_upsert` in a transaction). A pending upsert only comes
    from PostgreSQL's read."""
    return _POSTGRESQL.guarded(pending)


def event_track(
    *, project: Project, email: str, name: str, subscribed: bool | None = None, data: dict | None = None
) -> TrackResult:
    """`/v1/track` and `/events/track`: upsert the contact (new ones subscribed unless told otherwise), apply the
    data rules, record the event with both persistent and per-request values. The caller has validated `name`."""
    return upsert_path().track(project=project, email=email, name=name, subscribed=subscribed, data=data)
