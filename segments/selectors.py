from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from core.pages import Page
from segments.conditions import condition_validate
from segments.conditions.spec import condition_fields, field_covers, segment_references
from segments.conditions.sql import segment_contacts
from segments.models import Segment, SegmentMembership, SegmentType


def segment_list(*, project: Project) -> QuerySet[Segment]:
    return Segment.objects.filter(project=project).order_by("-created_at", "-id")


def segment_members(*, segment: Segment, now: datetime | None = None) -> QuerySet[Contact]:
    """The segment's contacts, live for a dynamic segment, newest first."""
    return segment_contacts(segment, now=now or timezone.now()).order_by("-created_at", "-id")


@dataclass
class ConditionPreview:
    count: int
    sample: list[Contact]


def condition_preview(*, project: Project, condition, segment_id=None, size: int = 10) -> ConditionPreview:
    """Who a condition selects in `project` now: how many, and the `size` newest of them (the console's live count).

    The condition is validated as a segment's is (`segment_id`: the segment it would belong to, for the cycle
    check) and compiled by the same path as a dynamic segment's members, through an unsaved segment."""
    condition_validate(condition, project=project, segment_id=segment_id)
    members = segment_members(segment=Segment(project=project, type=SegmentType.DYNAMIC, condition=condition))
    return ConditionPreview(count=members.count(), sample=list(members.only("id", "email")[:size]))


def segment_members_page(*, segment: Segment, page: int, page_size: int) -> Page:
    """One page of `GET /segments/:id/contacts`, newest first. The rows are live; the total is counted only when
    the page cannot tell it.

    1. Read the page plus one row: the extra row says whether more members follow.
    2. A page that shows the end of the list (fewer rows than asked, or none on page 1) gives the exact total.
    3. Otherwise the total is the segment's cached `memberCount` when it was counted within
       SEGMENT_REFRESH_MINUTES (the periodic refresh keeps it so) and agrees with what the page showed; else the
       members are counted now and the count cached, as `POST /segments/:id/refresh` would.
    Counting a large live segment costs hundreds of milliseconds; the page itself a few."""
    start = (page - 1) * page_size
    rows = list(segment_members(segment=segment)[start : start + page_size + 1])
    more = len(rows) > page_size
    rows = rows[:page_size]
    if (rows and not more) or (page == 1 and not rows):
        return Page(rows=rows, page=page, page_size=page_size, total=start + len(rows))
    fresh_since = timezone.now() - timedelta(minutes=settings.SEGMENT_REFRESH_MINUTES)
    cached = segment.member_count
    plausible = cached > start + len(rows) if more else cached <= start
    if segment.counted_at is None or segment.counted_at < fresh_since or not plausible:
        cached = segment_members(segment=segment).count()
        Segment.objects.filter(pk=segment.pk).update(member_count=cached, counted_at=timezone.now())
    return Page(rows=rows, page=page, page_size=page_size, total=cached)


def contact_memberships(*, contact: Contact, limit: int) -> list[SegmentMembership]:
    """The contact's present memberships (of static segments and of dynamic ones that track membership), at most
    `limit`, by segment name, with their segments. A dynamic segment that does not track membership keeps no rows:
    whether the contact matches it is known only by evaluating its condition."""
    return list(
        SegmentMembership.objects.filter(contact=contact, exited_at=None, segment__project_id=contact.project_id)
        .select_related("segment")
        .order_by("segment__name", "segment_id")[:limit]
    )


def segments_using_segment(project: Project, segment: Segment) -> list[dict]:
    """Usage finder of segments: the segments of the project whose condition has a `segment.<id>` filter naming it."""
    others = Segment.objects.filter(project_id=segment.project_id).exclude(pk=segment.pk).exclude(condition=None)
    return [
        {"id": str(s.id), "name": s.name}
        for s in others
        if any(ref == str(segment.id) for _p, ref in segment_references(s.condition))
    ]


def _segments_using(project: Project, uses) -> list[dict]:
    rows = Segment.objects.filter(project=project).exclude(condition=None).order_by("created_at", "id")
    return [{"id": str(s.id), "name": s.name} for s in rows if any(uses(f) for f in condition_fields(s.condition))]


def segments_using_field(project: Project, field: str) -> list[dict]:
    """Usage finder of contact fields: `data.plan` is used by filters on `data.plan` and below (`data.plan.tier`)."""
    return _segments_using(project, lambda used: field_covers(used, field))


def segments_using_event(project: Project, name: str) -> list[dict]:
    return _segments_using(project, lambda used: used == f"event.{name}")


def segments_due(*, older_than: datetime, limit: int) -> list:
    """Ids of the segments (all projects) whose count was last refreshed before `older_than`, stalest first."""
    rows = Segment.objects.filter(Q(refreshed_at=None) | Q(refreshed_at__lt=older_than))
    return list(rows.order_by(F("refreshed_at").asc(nulls_first=True), "id").values_list("id", flat=True)[:limit])
