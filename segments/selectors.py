from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from segments.conditions import condition_q
from segments.conditions.spec import segment_references
from segments.models import Segment, SegmentType


def segment_list(*, project: Project) -> QuerySet[Segment]:
    return Segment.objects.filter(project=project).order_by("-created_at", "-id")


def segment_members(*, segment: Segment, now: datetime | None = None) -> QuerySet[Contact]:
    """The segment's contacts, live for a dynamic segment, newest first."""
    contacts = Contact.objects.filter(project_id=segment.project_id)
    if segment.type == SegmentType.DYNAMIC and segment.condition:
        contacts = contacts.filter(condition_q(segment.condition, now=now or timezone.now()))
    else:
        # Static members are stored in the membership table, which is not built yet: no members.
        contacts = contacts.none()
    return contacts.order_by("-created_at", "-id")


def segment_has_member(*, segment: Segment, contact: Contact) -> bool:
    """Membership of one contact in a static segment (stored members: not built yet, so none)."""
    return False


def segments_referencing(*, segment: Segment) -> list[Segment]:
    """Segments of the project whose condition has a `segment.<id>` filter naming `segment`."""
    others = Segment.objects.filter(project_id=segment.project_id).exclude(pk=segment.pk).exclude(condition=None)
    return [s for s in others if any(ref == str(segment.id) for _p, ref in segment_references(s.condition))]
