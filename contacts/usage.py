"""What uses a contact field or an event name (the finders of `core.usage`, registered by segments, campaigns,
workflows and templates), with the counts the usage endpoints show.
"""

from dataclasses import dataclass

from accounts.models import Project
from contacts import selectors
from core.usage import used_in


@dataclass(frozen=True)
class FieldUsage:
    field: str
    used_in: dict[str, list[dict]]
    contact_count: int

    @property
    def can_delete(self) -> bool:
        """Only a custom field that nothing uses can be deleted."""
        standard, _key = selectors.split_field(self.field)
        return standard is None and not any(self.used_in.values())


def field_usage_summary(*, project: Project, field: str) -> FieldUsage:
    """What uses the field, and how many contacts have a value for it."""
    return FieldUsage(
        field=field,
        used_in=used_in("field", project=project, of=field),
        contact_count=selectors.contact_field_count(project=project, field=field),
    )


@dataclass(frozen=True)
class EventUsage:
    used_in_segments: list[dict]
    used_in_workflows: list[dict]
    total_count: int
    unique_contacts: int

    @property
    def can_delete(self) -> bool:
        return not (self.used_in_segments or self.used_in_workflows)


def event_usage_summary(*, project: Project, name: str) -> EventUsage:
    """What uses the event name, and how many events (and contacts) carry it."""
    used = used_in("event", project=project, of=name)
    total, unique = selectors.event_name_counts(project=project, name=name)
    return EventUsage(
        used_in_segments=used["segments"],
        used_in_workflows=used["workflows"],
        total_count=total,
        unique_contacts=unique,
    )
