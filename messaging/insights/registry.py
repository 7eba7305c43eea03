"""What other apps plug into the activity feed and the analytics, so that campaigns and workflows can add their
records without this package knowing their models: activity sources, upcoming providers, counters of
`/activity/stats`, and the campaign directory (each hook below says what it asks of an implementation).
"""

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from accounts.models import Project
from core.hooks import Hook


@dataclass(frozen=True)
class ActivityItem:
    """One entry of the feed, as `messaging.insights.api.serializers.ActivityItemSerializer` writes it. `detail` is
    what only a contact's timeline in the console shows beside the metadata (a workflow execution's current step);
    the API does not write it."""

    id: uuid.UUID
    type: str
    timestamp: datetime
    contact_id: uuid.UUID | None = None
    contact_email: str | None = None
    email_id: uuid.UUID | None = None
    metadata: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Upcoming:
    """One thing due to happen: `item` is what `/activity/upcoming` lists (`{type: "campaign", id, name,
    scheduledFor}` or `{type: "workflow", id, workflowId, contactId, resumeAt}`), `at` when it happens."""

    id: uuid.UUID
    at: datetime
    item: dict


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
    `present_types(project)` says which of `types` the project has at least one item of. `prepare(rows)`, when
    given, completes a page's rows at once before they become items (figures read for the page, not per row).
    A source with `feed` False holds a contact's records that are not activity of the API (an email's row, a
    segment entry): only a contact's timeline in the console (`messaging.insights.timeline`) lists them.
    """

    name: str
    types: tuple[str, ...]
    queryset: Callable[[Project, ActivityFilters], QuerySet | None]
    timestamp_field: str
    item: Callable[[Any], ActivityItem]
    present_types: Callable[[Project], Iterable[str]]
    prepare: Callable[[list], list] | None = None
    feed: bool = True


@dataclass(frozen=True)
class CampaignInfo:
    name: str
    subject: str
    status: str


class CampaignDirectory:
    """What the campaigns app answers about its campaigns; this base knows none (they stay ids on email rows)."""

    def describe(self, *, project: Project, campaign_ids: list[uuid.UUID]) -> dict[uuid.UUID, CampaignInfo]:
        return {}

    def counts(self, *, project: Project, since: datetime) -> dict[str, int] | None:
        """`{total, active, completed}` over campaigns created since `since`, or None to derive them from emails."""
        return None


activity_sources: Hook[ActivitySource] = Hook(
    "messaging.insights.registry.activity_sources",
    """An `ActivitySource`, registered under its name: one kind of record as activity items of some types (the
    events table is the first; scheduled and sent campaigns, workflow runs come with their apps).""",
)
upcoming_providers: Hook[Callable[..., list[Upcoming]]] = Hook(
    "messaging.insights.registry.upcoming_providers",
    """`provider(project=, until=, limit=)`, registered under a name: at most `limit` things that will happen between
    now and `until` (scheduled campaigns, waiting workflow executions) as `Upcoming` records, soonest first.""",
)
COUNTERS = ("totalWorkflowsStarted",)
activity_counters: Hook[Callable[..., int]] = Hook(
    "messaging.insights.registry.activity_counters",
    """`counter(project=, since=)`, registered under one of COUNTERS: a figure of `/activity/stats` that another app
    owns (`totalWorkflowsStarted`); 0 until one is registered.""",
    keys=COUNTERS,
)
campaign_directories: Hook[CampaignDirectory] = Hook(
    "messaging.insights.registry.campaign_directories",
    """A `CampaignDirectory`: names, subjects and statuses of campaigns, which the analytics otherwise only know as
    `Email.campaign_id`.""",
)


def activity_counter(name: str, *, project: Project, since: datetime) -> int:
    counter = activity_counters.implementations.get(name)
    return counter(project=project, since=since) if counter else 0


def campaigns_describe(*, project: Project, campaign_ids: list[uuid.UUID]) -> dict[uuid.UUID, CampaignInfo]:
    known: dict[uuid.UUID, CampaignInfo] = {}
    for directory in campaign_directories:
        known.update(directory.describe(project=project, campaign_ids=campaign_ids))
    return known


def campaigns_counts(*, project: Project, since: datetime) -> dict[str, int] | None:
    """The first directory's counts, or None to derive them from emails."""
    for directory in campaign_directories:
        counts = directory.counts(project=project, since=since)
        if counts is not None:
            return counts
    return None
