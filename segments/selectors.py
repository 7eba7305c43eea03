from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact
from segments.conditions import condition_q
from segments.models import Segment, SegmentType


def segment_list(*, project: Project) -> QuerySet[Segment]:
    return Segment.objects.filter(project=project).order_by("-created_at", "-id")


def segment_members(*, segment: Segment) -> QuerySet[Contact]:
    """The segment's contacts, live for a dynamic segment, newest first."""
    contacts = Contact.objects.filter(project_id=segment.project_id)
    if segment.type == SegmentType.DYNAMIC and segment.condition:
        contacts = contacts.filter(condition_q(segment.condition, now=timezone.now()))
    else:
        # Static members are stored in the membership table, which is not built yet: no members.
        contacts = contacts.none()
    return contacts.order_by("-created_at", "-id")
