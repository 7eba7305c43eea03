"""Where contact fields and event names are used: a registry that the apps referencing them fill in.

Each app that can reference a contact field (segments, campaigns, workflows, templates) or an event name (segments,
workflows) registers a finder in its `AppConfig.ready()`:

    from contacts.usage import register_field_usage
    register_field_usage("segments", lambda project, field: [{"id": str(s.id), "name": s.name} for s in ...])

A finder gets the project and the field (`data.plan`, `email`, ...) or event name and returns a list of
`{id, name}` items. The contacts app never imports those apps.
"""

from collections.abc import Callable
from dataclasses import dataclass

from accounts.models import Project
from contacts import selectors

UsageFinder = Callable[[Project, str], list[dict]]

FIELD_USAGE_KINDS = ("segments", "campaigns", "workflows", "templates")
EVENT_USAGE_KINDS = ("segments", "workflows")

_field_finders: dict[str, list[UsageFinder]] = {kind: [] for kind in FIELD_USAGE_KINDS}
_event_finders: dict[str, list[UsageFinder]] = {kind: [] for kind in EVENT_USAGE_KINDS}


def _register(registry: dict, kind: str, finder: UsageFinder) -> None:
    if kind not in registry:
        raise ValueError(f"Unknown usage kind {kind!r}; expected one of {sorted(registry)}")
    if finder not in registry[kind]:
        registry[kind].append(finder)


def register_field_usage(kind: str, finder: UsageFinder) -> None:
    _register(_field_finders, kind, finder)


def register_event_usage(kind: str, finder: UsageFinder) -> None:
    _register(_event_finders, kind, finder)


def _collect(registry: dict, project: Project, name: str) -> dict[str, list[dict]]:
    found = {}
    for kind, finders in registry.items():
        items: list[dict] = []
        for finder in finders:
            items.extend(finder(project, name))
        found[kind] = items
    return found


def field_usage(*, project: Project, field: str) -> dict[str, list[dict]]:
    """`{segments, campaigns, workflows, templates}`, each a list of `{id, name}`."""
    return _collect(_field_finders, project, field)


def event_usage(*, project: Project, name: str) -> dict[str, list[dict]]:
    """`{segments, workflows}`, each a list of `{id, name}`."""
    return _collect(_event_finders, project, name)


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
        used_in=field_usage(project=project, field=field),
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
    used_in = event_usage(project=project, name=name)
    total, unique = selectors.event_name_counts(project=project, name=name)
    return EventUsage(
        used_in_segments=used_in["segments"],
        used_in_workflows=used_in["workflows"],
        total_count=total,
        unique_contacts=unique,
    )
