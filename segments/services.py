"""Writes of segments. Every condition goes through segments.conditions.condition_validate before it is stored."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import Project
from contacts.models import Contact
from contacts.services import events_record_bulk, events_record_for_contacts, normalize_email
from contacts.upsert import contact_upsert
from core.errors import ValidationFailed
from core.usage import refuse_delete_while_used, used_in
from segments.conditions import condition_validate
from segments.models import Segment, SegmentMembership, SegmentType
from segments.receivers import forget_tracked
from segments.selectors import segment_members

UNSET = object()


def _check_condition(*, project: Project, segment_type: str, condition, segment_id=None) -> None:
    if segment_type == SegmentType.STATIC and condition is not None:
        raise ValidationFailed.field("condition", "A STATIC segment has no condition; omit it or send null")
    if segment_type == SegmentType.DYNAMIC:
        condition_validate(condition, project=project, segment_id=segment_id)


def _recount(segment: Segment) -> None:
    """Take the full count into `member_count` (saved by the caller) and note when."""
    segment.member_count = segment_members(segment=segment).count()
    segment.counted_at = timezone.now()


def segment_create(
    *,
    project: Project,
    name: str,
    description: str = "",
    segment_type: str = SegmentType.DYNAMIC,
    condition=None,
    track_membership: bool = False,
) -> Segment:
    _check_condition(project=project, segment_type=segment_type, condition=condition)
    segment = Segment(
        project=project,
        name=name,
        description=description,
        type=segment_type,
        condition=condition,
        track_membership=track_membership,
    )
    segment.full_clean()
    _recount(segment)
    segment.save()
    forget_tracked(segment.project_id)
    return segment


def segment_update(
    *, segment: Segment, name=UNSET, description=UNSET, condition=UNSET, track_membership=UNSET
) -> Segment:
    fields = []
    if condition is not UNSET:
        if segment.type == SegmentType.STATIC:
            raise ValidationFailed.field("condition", "Only a DYNAMIC segment has a condition")
        _check_condition(project=segment.project, segment_type=segment.type, condition=condition, segment_id=segment.id)
        segment.condition = condition
        fields.append("condition")
    for attr, value in (("name", name), ("description", description), ("track_membership", track_membership)):
        if value is not UNSET:
            setattr(segment, attr, value)
            fields.append(attr)
    segment.full_clean()
    if "condition" in fields:
        _recount(segment)
        fields += ["member_count", "counted_at"]
    segment.updated_at = timezone.now()
    segment.save(update_fields=[*fields, "updated_at"])
    forget_tracked(segment.project_id)
    return segment


def segment_delete(*, segment: Segment) -> None:
    """Delete a segment unless another segment's condition or a campaign still needing it uses it (409 naming the
    first kind of them: `used by segment "A"`, `used by campaign "B" (DRAFT)`)."""
    used = used_in("segment", project=segment.project, of=segment)
    kind, users = next(((kind, users) for kind, users in used.items() if users), ("", []))
    named = ", ".join(f'"{u["name"]}" ({u["status"]})' if "status" in u else f'"{u["name"]}"' for u in users)
    refuse_delete_while_used(
        used,
        f'Segment "{segment.name}" cannot be deleted: used by {kind.removesuffix("s")} {named}',
        segmentId=str(segment.id),
    )
    segment.delete()
    forget_tracked(segment.project_id)


def segment_refresh(*, segment: Segment) -> Segment:
    """Recount the members and cache the count; no membership writes, no events."""
    _recount(segment)
    segment.save(update_fields=["member_count", "counted_at"])
    return segment


def _require_static(segment: Segment) -> None:
    if segment.type != SegmentType.STATIC:
        raise ValidationFailed.field(
            "type", "Members can be added or removed only on a STATIC segment", received=segment.type
        )


@dataclass
class MembersAdded:
    added: int = 0
    created: int = 0
    not_found: list[str] = field(default_factory=list)


def segment_members_add(
    *, segment: Segment, emails: list[str], create_missing: bool = False, subscribed: bool | None = None
) -> MembersAdded:
    """Add contacts to a static segment by email.

    1. Normalise and de-duplicate the emails; find their contacts in one query.
    2. Missing ones are created through the contacts upsert when `create_missing`, else reported in `not_found`.
    3. Insert or re-open memberships in bulk; `added` counts contacts that were not members before.
    4. Refresh the cached count."""
    _require_static(segment)
    result = MembersAdded()
    wanted = list(dict.fromkeys(normalize_email(e) for e in emails))
    found = dict(Contact.objects.filter(project_id=segment.project_id, email__in=wanted).values_list("email", "id"))
    for email in wanted:
        if email in found:
            continue
        if not create_missing:
            result.not_found.append(email)
            continue
        upsert = contact_upsert(project=segment.project, email=email, subscribed=subscribed, source="segment")
        found[email] = upsert.contact.id
        result.created += int(upsert.created)
    ids = set(found.values())
    memberships = SegmentMembership.objects.filter(segment_id=segment.id, contact_id__in=ids)
    current = set(memberships.filter(exited_at=None).values_list("contact_id", flat=True))
    now = timezone.now()
    memberships.exclude(exited_at=None).update(exited_at=None, entered_at=now)
    SegmentMembership.objects.bulk_create(
        [SegmentMembership(segment_id=segment.id, contact_id=cid, entered_at=now) for cid in ids],
        ignore_conflicts=True,
    )
    result.added = len(ids - current)
    segment_refresh(segment=segment)
    return result


def segment_members_remove(*, segment: Segment, emails: list[str]) -> int:
    """Remove contacts from a static segment by email; the number of members removed."""
    _require_static(segment)
    wanted = {normalize_email(e) for e in emails}
    removed = SegmentMembership.objects.filter(
        segment_id=segment.id, exited_at=None, contact__email__in=wanted, contact__project_id=segment.project_id
    ).update(exited_at=timezone.now())
    segment_refresh(segment=segment)
    return removed


def segment_slug(segment: Segment) -> str:
    """The `<slug>` of `segment.<slug>.entry` / `.exit` events: the slugified name, or the id for a name that
    slugifies to nothing."""
    return slugify(segment.name) or str(segment.id)


@dataclass
class ComputeResult:
    added: int
    removed: int
    total: int


def segment_compute(*, segment: Segment) -> ComputeResult:
    """Diff a tracked dynamic segment's live condition against its stored members and record the moves.

    1. Lock the segment row (one compute of a segment at a time; later runs wait, then see the new members).
    2. Exits: one UPDATE stamps `exited_at = now` on current members that the live condition no longer selects.
    3. Entries: one INSERT ... SELECT of the live contacts, whose ON CONFLICT re-opens former members' rows and
       leaves current members alone; every row it writes gets `entered_at = now`.
    4. The moved contacts' `segment.<slug>.entry` / `.exit` events are recorded from those stamps by the contacts
       app's set-based recorder (one INSERT ... SELECT on PostgreSQL), which announces them like any event.
    5. Count the open memberships into the cached count.
    The condition is evaluated in the database twice and no id list crosses to Python and back."""
    if segment.type != SegmentType.DYNAMIC or not segment.track_membership:
        raise ValidationFailed.field(
            "trackMembership", "Only a DYNAMIC segment with trackMembership true can be computed", received=segment.type
        )
    with transaction.atomic():
        Segment.objects.select_for_update().filter(pk=segment.pk).first()
        now = timezone.now()
        live = segment_members(segment=segment, now=now).order_by().values("pk")
        memberships = SegmentMembership.objects.filter(segment_id=segment.id)
        # NOT EXISTS, never NOT IN: PostgreSQL hashes a NOT IN list only while it fits in work_mem, and past that
        # re-reads the list for every member (at 100,000 members, minutes instead of a second).
        gone = ~Exists(live.filter(pk=OuterRef("contact_id")))
        removed = memberships.filter(gone, exited_at=None).update(exited_at=now)
        added = _enter_live(segment, live, now)
        slug = segment_slug(segment)
        data = {"segmentId": str(segment.id), "segmentName": segment.name}
        for stamp, kind in (({"entered_at": now, "exited_at": None}, "entry"), ({"exited_at": now}, "exit")):
            events_record_for_contacts(
                project=segment.project,
                contact_ids=memberships.filter(**stamp).values("contact_id"),
                name=f"segment.{slug}.{kind}",
                data=data,
            )
        segment.member_count = memberships.filter(exited_at=None).count()
        segment.counted_at = now
        segment.save(update_fields=["member_count", "counted_at"])
    return ComputeResult(added=added, removed=removed, total=segment.member_count)


_ENTER_LIVE = """
INSERT INTO {table} ({segment}, {contact}, {entered}, {exited})
SELECT %s, live.pk, %s, NULL FROM ({live}) AS live WHERE TRUE
ON CONFLICT ({segment}, {contact}) DO UPDATE SET {entered} = excluded.{entered}, {exited} = NULL
WHERE {table}.{exited} IS NOT NULL
"""


def _enter_live(segment: Segment, live, now) -> int:
    """Write the membership of every live contact that is not a current member (new rows, and re-opened rows of
    former members), with `entered_at = now`, in one statement on both databases; the number written.
    (`WHERE TRUE` lets SQLite parse ON CONFLICT after INSERT ... SELECT.)"""
    meta = SegmentMembership._meta
    quote = connection.ops.quote_name
    column = {name: quote(meta.get_field(name).column) for name in ("segment", "contact", "entered_at", "exited_at")}
    live_sql, live_params = live.query.sql_with_params()
    sql = _ENTER_LIVE.format(
        table=quote(meta.db_table),
        segment=column["segment"],
        contact=column["contact"],
        entered=column["entered_at"],
        exited=column["exited_at"],
        live=live_sql,
    )
    params = [
        meta.get_field("segment").get_db_prep_value(segment.id, connection),
        meta.get_field("entered_at").get_db_prep_value(now, connection),
        *live_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


# A claim older than this belongs to a worker that died: the next run may take the segment over.
CLAIM_TIMEOUT = timedelta(minutes=15)


def segment_recompute(*, segment_id) -> ComputeResult | None:
    """The periodic work on one segment: recompute a tracked dynamic segment (entries, exits, events), recount any
    other (no moves then). Claimed by a conditional UPDATE so two runs never work on one segment at once; None when
    another run holds it (or the segment is gone)."""
    now = timezone.now()
    free = Q(claimed_at=None) | Q(claimed_at__lt=now - CLAIM_TIMEOUT)
    if not Segment.objects.filter(free, pk=segment_id).update(claimed_at=now):
        return None
    try:
        segment = Segment.objects.select_related("project").get(pk=segment_id)
        if segment.type == SegmentType.DYNAMIC and segment.track_membership:
            return segment_compute(segment=segment)
        segment_refresh(segment=segment)
        return ComputeResult(added=0, removed=0, total=segment.member_count)
    finally:
        Segment.objects.filter(pk=segment_id).update(claimed_at=None, refreshed_at=timezone.now())


def segment_compute_preview(*, segment: Segment) -> ComputeResult:
    """What `segment_recompute` would do now, writing nothing: for a tracked dynamic segment the contacts that
    would enter and exit, for any other its live member count (`recompute_segments --dry-run`)."""
    now = timezone.now()
    live = segment_members(segment=segment, now=now).order_by().values("pk")
    if segment.type != SegmentType.DYNAMIC or not segment.track_membership:
        return ComputeResult(added=0, removed=0, total=live.count())
    current = SegmentMembership.objects.filter(segment_id=segment.id, exited_at=None)
    removed = current.filter(~Exists(live.filter(pk=OuterRef("contact_id")))).count()
    added = live.filter(~Exists(current.filter(contact_id=OuterRef("pk")))).count()
    return ComputeResult(added=added, removed=removed, total=live.count())


def segment_contact_reevaluate(*, contact_id) -> int:
    """Re-evaluate one contact against every tracked dynamic segment of its project (the incremental path, so
    entry and exit events follow a change within seconds instead of at the next periodic compute).

    For each segment, under the same row lock as `segment_compute`: ask the database whether the contact matches,
    compare with its stored membership, and on a difference write the membership, record the entry or exit event
    and move the cached count by one. Returns the number of moves."""
    contact = Contact.objects.select_related("project").filter(pk=contact_id).first()
    if contact is None:
        return 0
    moves = 0
    tracked = Segment.objects.filter(project_id=contact.project_id, type=SegmentType.DYNAMIC, track_membership=True)
    for segment in tracked:
        with transaction.atomic():
            Segment.objects.select_for_update().filter(pk=segment.pk).first()
            now = timezone.now()
            live = segment_members(segment=segment, now=now).filter(pk=contact.pk).exists()
            row = SegmentMembership.objects.filter(segment_id=segment.id, contact_id=contact.id).first()
            if live == (row is not None and row.exited_at is None):
                continue
            if live and row is None:
                SegmentMembership.objects.create(segment_id=segment.id, contact_id=contact.id, entered_at=now)
            elif live:
                row.entered_at, row.exited_at = now, None
                row.save(update_fields=["entered_at", "exited_at"])
            else:
                row.exited_at = now
                row.save(update_fields=["exited_at"])
            kind = "entry" if live else "exit"
            data = {"segmentId": str(segment.id), "segmentName": segment.name}
            events_record_bulk(
                project=contact.project, items=[(contact, f"segment.{segment_slug(segment)}.{kind}", data)]
            )
            Segment.objects.filter(pk=segment.pk).update(member_count=F("member_count") + (1 if live else -1))
            moves += 1
    return moves


def project_segments_delete(project: Project) -> int:
    """A project reset's step (accounts.tenancy.registry)."""
    deleted, _ = Segment.objects.filter(project=project).delete()
    return deleted
