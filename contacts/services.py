"""Writes of the contacts app: contacts, their subscription and their events (the upsert, with /v1/track, is
`contacts.upsert`).

Every contact write goes through `data_rules` (docs/contacts.md, "Data rules") and every subscription change through
`contact_subscription_set` / `contacts_subscription_bulk_set`, which record `contact.subscribed` or
`contact.unsubscribed`. Every event, tracked or system, is recorded by `event_record`, `events_record_bulk` or
`events_record_for_contacts`, which fire the `contacts.signals` hooks after commit.
"""

import itertools
import json
import re
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Job, Project
from accounts.tenancy.selectors import project_ids_in_scope
from contacts.data_rules import data_rules
from contacts.models import Contact, Event, ImportUpload
from contacts.signals import contacts_changed, event_recorded, events_recorded
from core.batches import purge, purge_by_project
from core.commit import after_commit
from core.db import insert_prepared
from core.errors import Conflict
from core.partitions import partitions_drop_before

SUBSCRIBED_EVENT = "contact.subscribed"
UNSUBSCRIBED_EVENT = "contact.unsubscribed"
_RESERVED_EVENT = re.compile(r"^(email\..*|contact\.subscribed|contact\.unsubscribed|segment\..+\.(entry|exit))$", re.S)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def normalize_email(email: str) -> str:
    return email.strip().lower()


def event_name_is_reserved(name: str) -> bool:
    return bool(_RESERVED_EVENT.match(name))


# Events ----------------------------------------------------------------------------------------------------------


def events_announce(*, project: Project, events: list[Event]) -> None:
    """Fire the `contacts.signals` event hooks after commit for events just written (by this module's recorders, or
    by `contacts.upsert`, which writes /v1/track's event with its contact)."""
    if not events or not (event_recorded.has_listeners(Event) or events_recorded.has_listeners(Event)):
        return

    def send() -> None:
        # Robust: one receiver's failure (logged by Django) does not keep the others from their work.
        if event_recorded.has_listeners(Event):  # each event's contact is loaded for it unless already at hand
            for event in events:
                event_recorded.send_robust(sender=Event, project=project, contact=event.contact, event=event)
        events_recorded.send_robust(sender=Event, project=project, events=events)

    after_commit(send, what=f"announce {len(events)} event(s) of project {project.id}")


def contact_changed_announce(*, project_id, contact_id) -> None:
    """Fire `contacts_changed` after commit for a single contact whose email or data a write just changed."""
    if contacts_changed.has_listeners(Contact):
        after_commit(
            lambda: contacts_changed.send_robust(sender=Contact, project_id=project_id, contact_ids=[contact_id]),
            what=f"announce the change of contact {contact_id}",
        )


def event_record(
    *, project: Project, contact: Contact, name: str, data: dict | None = None, email_id=None, chain: list | None = None
) -> Event:
    """Record one event (tracked or system) and announce it after commit; `chain`: its chain of causes, when an
    automated run recorded it (`Event.chain`)."""
    event = Event.objects.create(
        project=project, contact=contact, name=name, data=data or {}, email_id=email_id, chain=chain
    )
    events_announce(project=project, events=[event])
    return event


def events_record_bulk(
    *, project: Project, items: Iterable[tuple[Contact, str, dict]], email_ids: Iterable | None = None
) -> list[Event]:
    """Record many events and announce them after commit; `items` are (contact, name, data), and `email_ids`, when
    given, the email each event is about (same order). One prepared INSERT per thousand (`core.db`): a delivery
    batch's `email.sent` events cost a tenth of what `bulk_create` took."""
    now = timezone.now()
    items = list(items)
    ids = list(email_ids) if email_ids is not None else [None] * len(items)
    events = [
        Event(project=project, contact=c, name=n, data=d or {}, email_id=e, created_at=now)
        for (c, n, d), e in zip(items, ids, strict=True)
    ]
    for start in range(0, len(events), EVENTS_CHUNK):
        insert_prepared(events[start : start + EVENTS_CHUNK])
    events_announce(project=project, events=events)
    return events


# Without PostgreSQL, ids are streamed and their events written this many at a time (memory stays bounded).
EVENTS_CHUNK = 2000
# A UUIDv7 made in SQL (PostgreSQL 15 has no uuidv7()): the random v4 with its first 48 bits replaced by the Unix
# time in milliseconds and the version nibble turned from 4 into 7. Event ids are time-ordered (see `Event.id`).
_PG_UUID7 = (
    "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing "
    "substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), "
    "53, 1), 'hex')::uuid"
)
# One event per contact of a query, generated in the database.
_PG_EVENTS_FOR_CONTACTS = f"""
INSERT INTO contacts_event (id, project_id, contact_id, name, email_id, data, created_at)
SELECT {_PG_UUID7}, %s, selected.contact_id, %s, NULL, %s::jsonb, %s FROM ({{contacts}}) AS selected
RETURNING id, contact_id
"""  # noqa: S608 - constant SQL


def events_record_for_contacts(*, project: Project, contact_ids: QuerySet, name: str, data: dict) -> int:
    """Record the event `name` with `data` for every contact id `contact_ids` selects (a `values("contact_id")`
    query of this project's contacts), and announce them after commit; returns how many.

    The ids are streamed and recorded through `events_record_bulk`, a chunk at a time; PostgreSQL takes a speed path
    with the same result (`_pg_events_for_contacts`)."""
    if connection.vendor == "postgresql":
        return _pg_events_for_contacts(project=project, contact_ids=contact_ids, name=name, data=data)
    recorded = 0
    ids = contact_ids.values_list("contact_id", flat=True).iterator(chunk_size=EVENTS_CHUNK)
    while chunk := list(itertools.islice(ids, EVENTS_CHUNK)):
        contacts = [contact_stub(project, contact_id) for contact_id in chunk]
        recorded += len(events_record_bulk(project=project, items=[(c, name, data) for c in contacts]))
    return recorded


def _pg_events_for_contacts(*, project: Project, contact_ids: QuerySet, name: str, data: dict) -> int:
    """`events_record_for_contacts` in one `INSERT ... SELECT`: 100,000 segment entry events without loading a
    contact or building the rows in Python."""
    now = timezone.now()
    selected_sql, selected_params = contact_ids.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            _PG_EVENTS_FOR_CONTACTS.format(contacts=selected_sql),
            [project.id, name, json.dumps(data), now, *selected_params],
        )
        rows = cursor.fetchall()
    # Every field, `chain` too: a deferred one would cost a query per event when a receiver reads it.
    fields = ("id", "project_id", "contact_id", "name", "email_id", "data", "chain", "created_at")
    events = [
        Event.from_db(connection.alias, fields, (event_id, project.id, contact_id, name, None, data, None, now))
        for event_id, contact_id in rows
    ]
    events_announce(project=project, events=events)
    return len(events)


def contact_stub(project: Project, contact_id) -> Contact:
    """A contact known by its id and project, for the events that name it; its other fields are deferred (read from
    the database if anything asks), and it is made at half the cost of a full instance."""
    contact = Contact.from_db(connection.alias, ["id", "project_id"], [contact_id, project.id])
    Contact.project.field.set_cached_value(contact, project)
    return contact


def events_delete_by_name(*, project: Project, name: str) -> int:
    deleted, _ = Event.objects.filter(project=project, name=name).delete()
    return deleted


# Subscription ------------------------------------------------------------------------------------------------------


def contact_subscription_set(
    *,
    contact: Contact,
    subscribed: bool | None,
    source: str,
    save: bool = True,
    email_id=None,
    chain: list | None = None,
) -> Event | None:
    """The one place a single contact's subscription changes.

    Records `contact.subscribed` / `contact.unsubscribed` when the value really changes and nothing otherwise,
    with `email_id` when the change came through the links of an email (a campaign counts its opt-outs by it), and
    `chain` when an automated run made it (`Event.chain`). With `save=False` the caller saves the contact (together
    with its other changes) itself.
    """
    if subscribed is None or contact.subscribed == subscribed:
        return None
    contact.subscribed = subscribed
    if save:
        contact.updated_at = timezone.now()
        contact.save(update_fields=["subscribed", "updated_at"])
    return event_record(
        project=contact.project,
        contact=contact,
        name=SUBSCRIBED_EVENT if subscribed else UNSUBSCRIBED_EVENT,
        data={"source": source},
        email_id=email_id,
        chain=chain,
    )


def contacts_subscription_bulk_set(
    *, project: Project, contacts: Sequence[Contact], subscribed: bool, source: str
) -> list[Contact]:
    """Set the subscription of many contacts of `project` in one UPDATE; return those that changed, each of which
    gets its subscription event (in one INSERT)."""
    changing = [c for c in contacts if c.project_id == project.id and c.subscribed != subscribed]
    if not changing:
        return []
    now = timezone.now()
    Contact.objects.filter(project=project, id__in=[c.id for c in changing]).update(
        subscribed=subscribed, updated_at=now
    )
    name = SUBSCRIBED_EVENT if subscribed else UNSUBSCRIBED_EVENT
    for contact in changing:
        contact.subscribed, contact.updated_at = subscribed, now
    events_record_bulk(project=project, items=[(c, name, {"source": source}) for c in changing])
    return changing


# Contacts ------------------------------------------------------------------------------------------------------------


def contact_update(
    *, contact: Contact, email: str | None = UNSET, subscribed: bool | None = None, data: dict | None = UNSET
) -> Contact:
    """PATCH semantics: `email` (409 when another contact of the project has it), `subscribed` (events on change),
    `data` patched by the data rules, or cleared entirely by `data: null`."""
    fields = []
    if email is not UNSET and email is not None:
        email = normalize_email(email)
        if email != contact.email:
            if Contact.objects.filter(project_id=contact.project_id, email=email).exclude(pk=contact.pk).exists():
                raise Conflict(f'A contact with email "{email}" already exists', details={"field": "email"})
            contact.email = email
            fields.append("email")
    if data is not UNSET:
        new_data = {} if data is None else data_rules(data).apply(contact.data)
        if new_data != contact.data:
            contact.data = new_data
            fields.append("data")
    if contact_subscription_set(contact=contact, subscribed=subscribed, source="api", save=False):
        fields.append("subscribed")
    if fields:
        contact.updated_at = timezone.now()
        try:
            with transaction.atomic():
                contact.save(update_fields=[*fields, "updated_at"])
        except IntegrityError:
            raise Conflict(
                f'A contact with email "{contact.email}" already exists', details={"field": "email"}
            ) from None
    if "data" in fields or "email" in fields:
        contact_changed_announce(project_id=contact.project_id, contact_id=contact.id)
    return contact


def contact_delete(*, contact: Contact) -> None:
    """Delete the contact; its events go with it (database cascade through the ORM's fast delete)."""
    contact.delete()


def contacts_delete_bulk(*, project: Project, contact_ids: Iterable) -> list:
    """Delete the contacts of `project` among `contact_ids` (others are ignored); return the ids deleted."""
    ids = list(Contact.objects.filter(project=project, id__in=list(contact_ids)).values_list("id", flat=True))
    if ids:
        Event.objects.filter(project=project, contact_id__in=ids).delete()
        Contact.objects.filter(project=project, id__in=ids).delete()
    return ids


def contact_field_delete(*, project: Project, key: str) -> int:
    """Remove the data key from every contact of the project that has it; return how many had it.

    Row by row through the ORM; PostgreSQL takes a speed path with the same result, one UPDATE."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        project_id = Contact._meta.get_field("project").get_db_prep_value(project.id, connection)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE contacts_contact SET data = data - %s, updated_at = %s WHERE project_id = %s AND data ? %s",
                [key, now, project_id, key],
            )
            return cursor.rowcount
    changed = [c for c in Contact.objects.filter(project=project).only("id", "data") if key in c.data]
    for contact in changed:
        del contact.data[key]
        contact.updated_at = now
    Contact.objects.bulk_update(changed, ["data", "updated_at"], batch_size=500)
    return len(changed)


# Retention (docs/operations.md) ------------------------------------------------------------------------------------


def events_purge_old(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Delete events older than EVENT_RETENTION_DAYS (0, the default, keeps them all), project by project and
    oldest first along the (project, created_at, id) index. Segment conditions on events and the activity feed
    then see only the events kept.

    On PostgreSQL, where events are partitioned by month, a run for every project first drops the months wholly
    before the cutoff (their rows are counted as deleted), so only the month the cutoff falls in is deleted row by
    row; a run for one project deletes its rows only."""
    if settings.EVENT_RETENTION_DAYS <= 0:
        return 0
    cutoff = timezone.now() - timedelta(days=settings.EVENT_RETENTION_DAYS)
    dropped = 0
    if project_id is None and not dry_run:
        dropped = partitions_drop_before(table=Event._meta.db_table, cutoff=cutoff)
    return dropped + purge_by_project(
        Event.objects.filter(created_at__lt=cutoff),
        project_ids=project_ids_in_scope(project_id=project_id),
        order_by=("created_at", "id"),
        batch_size=batch_size,
        max_batches=max_batches,
        dry_run=dry_run,
    )


def import_uploads_purge_finished(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Delete the uploaded files of finished imports: an import removes its own when it ends, but a worker killed
    between finishing the job and that delete leaves it, and nothing would run the import again to remove it."""
    finished = ImportUpload.objects.filter(job__status__in=[Job.Status.COMPLETED, Job.Status.FAILED])
    if project_id is not None:
        finished = finished.filter(job__project_id=project_id)
    return purge(finished, order_by=("pk",), batch_size=batch_size, max_batches=max_batches, dry_run=dry_run)


def project_contacts_delete(project: Project) -> int:
    """A project reset's step (accounts.tenancy.registry): every contact of the project, and with them their events."""
    Event.objects.filter(project=project).delete()
    deleted, _ = Contact.objects.filter(project=project).delete()
    return deleted


def project_contact_count(project: Project) -> int:
    return Contact.objects.filter(project=project).count()
