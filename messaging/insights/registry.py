"""What other apps plug into the activity feed and the analytics, so that campaigns and workflows can add their
records without this package knowing their models.

- Activity sources (`register_activity_source`): each turns one kind of record into activity items of some types
  (the events table is the first; scheduled and sent campaigns, workflow runs come with their apps).
- Upcoming providers (`register_upcoming_provider`): things that will happen (scheduled campaigns, waiting workflow
  executions) as activity items, soonest first.
- Counters (`register_activity_counter`): figures of `/activity/stats` that another app owns
  (`totalWorkflowsStarted`).
- The campaign directory (`register_campaign_directory`): names, subjects and statuses of campaigns, which the
  analytics otherwise only know as `Email.campaign_id`.
"""

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from accounts.models import Project


@dataclass(frozen=True)
class ActivityItem:
    """One entry of the feed, as `messaging.insights.api.serializers.ActivityItemSerializer` writes it."""

    id: uuid.UUID
    type: str
    timestamp: datetime
    contact_id: uuid.UUID | None = None
    contact_email: str | None = None
    email_id: uuid.UUID | None = None
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ActivityFilters:
    """What the caller asked for; `types` is None for all. A source answers only the filters it can honour and
    returns nothing for a contact or email filter it has no notion of."""

    types: frozenset[str] | None = None
    contact_id: uuid.UUID | None = None
    email_id: uuid.UUID | None = None
    start: datetime | None = None
    end: datetime | None = None


@dataclass(frozen=True)
class ActivitySource:
    """One kind of record as activity items.

    `queryset(project, filters)` returns the project's matching rows, or None when the filters exclude the whole
    source; the feed orders it by (`timestamp_field`, pk) descending and pages through it by keyset, so that pair
    must be indexed with the project. `item(row)` turns a row into an `ActivityItem` whose id is the row's pk.
    `present_types(project)` says which of `types` the project has at least one item of.
    """

    name: str
    types: tuple[str, ...]
    queryset: Callable[[Project, ActivityFilters], QuerySet | None]
    timestamp_field: str
    item: Callable[[Any], ActivityItem]
    present_types: Callable[[Project], Iterable[str]]


@dataclass(frozen=True)
class CampaignInfo:
    name: str
    subject: str
    status: str


class CampaignDirectory:
    """The campaigns app's answers; until it registers one, campaigns are only ids on email rows."""

    def describe(self, *, project: Project, campaign_ids: list[uuid.UUID]) -> dict[uuid.UUID, CampaignInfo]:
        return {}

    def counts(self, *, project: Project, since: datetime) -> dict[str, int] | None:
        """`{total, active, completed}` over campaigns created since `since`, or None to derive them from emails."""
        return None


_sources: dict[str, ActivitySource] = {}
_upcoming: dict[str, Callable[..., list[ActivityItem]]] = {}
_counters: dict[str, Callable[..., int]] = {}
_campaigns: list[CampaignDirectory] = [CampaignDirectory()]
COUNTERS = ("totalWorkflowsStarted",)


def register_activity_source(source: ActivitySource) -> None:
    _sources[source.name] = source


def activity_sources() -> list[ActivitySource]:
    return list(_sources.values())


def register_upcoming_provider(name: str, provider: Callable[..., list[ActivityItem]]) -> None:
    """`provider(project=, until=, limit=)` returns at most `limit` items due between now and `until`."""
    _upcoming[name] = provider


def upcoming_providers() -> list[Callable[..., list[ActivityItem]]]:
    return list(_upcoming.values())


def register_activity_counter(name: str, counter: Callable[..., int]) -> None:
    """`counter(project=, since=)` for one of COUNTERS."""
    if name not in COUNTERS:
        raise ValueError(f"Unknown activity counter {name!r}; known: {', '.join(COUNTERS)}")
    _counters[name] = counter


def activity_counter(name: str, *, project: Project, since: datetime) -> int:
    counter = _counters.get(name)
    return counter(project=project, since=since) if counter else 0


def register_campaign_directory(directory: CampaignDirectory) -> None:
    _campaigns[0] = directory


def campaign_directory() -> CampaignDirectory:
    return _campaigns[0]
