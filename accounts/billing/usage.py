"""Counting and capping the emails a project creates, on the send path (`messaging.sending.services`).

1. Before queueing, `allowance_read` reads the category's cap and this month's usage in one statement: the sum of
   the month's counter shards, never a count of email rows. A project found without a cap skips that read for a
   few seconds (`BILLING_UNCAPPED_CACHE_SECONDS`): there is nothing to check its usage against.
2. `Allowance.check` refuses a send that would pass the cap (429 `BILLING_LIMIT_EXCEEDED`); a workflow's email is
   stored FAILED instead (the caller asks `Allowance.exceeded_by`).
3. The emails' writer adds what it inserted to one randomly chosen shard of the month's counter in the same
   transaction, or the same statement (`counter_statement`, a CTE of the single-recipient write), with an UPSERT
   that adds to the stored count, so concurrent sends lose nothing. Spreading the increments over shards keeps
   the sends of one project from queueing behind one row lock.
4. A send that takes a category past 80 % of its cap leaves one warning per month (`UsageWarning`).

The check reads before the write: sends racing at the very edge of a cap can pass it by the number of requests in
flight together (docs/billing.md). A campaign's fan-out cannot: each batch takes the month's counter under a lock
(`allowance_hold`) and queues only what is left, so campaigns fanning out together stop at the cap.
"""

import random
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from accounts.billing.models import PAYING, Category, UsageCounter, UsageWarning
from accounts.models import Project
from core.db import execute_prepared, fetchone_prepared
from core.errors import BillingLimitExceeded

SHARDS = 8
WARNING_RATIO = 0.8
BLOCKED_REASON = "Billing limit exceeded"
_CATEGORIES = tuple(Category.values)


def month_of(moment: datetime) -> date:
    """The counting period of a moment: its calendar month in UTC."""
    return moment.astimezone(UTC).date().replace(day=1)


def effective_limit(own: int | None, subscription_status: str | None) -> int | None:
    """A category's cap: the project's own, and for a project without a paying subscription also the free tier
    (`FREE_TIER_MONTHLY_EMAILS`), whichever is lower."""
    free = settings.FREE_TIER_MONTHLY_EMAILS
    if free is None or subscription_status in PAYING:
        return own
    return free if own is None else min(own, free)


@dataclass(frozen=True)
class Allowance:
    project_id: uuid.UUID
    category: str
    month: date
    limit: int | None
    usage: int | None  # before this send; not read (None) without a cap

    def room(self, count: int) -> int:
        """How many of `count` more emails fit under the cap (all of them without one)."""
        return count if self.limit is None else max(0, min(count, self.limit - self.usage))

    def exceeded_by(self, count: int) -> bool:
        return self.limit is not None and self.usage + count > self.limit

    def check(self, count: int) -> None:
        if self.exceeded_by(count):
            raise BillingLimitExceeded(
                f"The monthly limit of {self.limit} {self.category} emails is reached "
                f"({self.usage} used, {count} more requested)",
                details={"category": self.category, "limit": self.limit, "usage": self.usage},
                suggestion="Raise the project's billing limit or wait for the next month",
            )


def _db_value(field_name: str, value, model=UsageCounter):
    return model._meta.get_field(field_name).get_db_prep_value(value, connections[DEFAULT_DB_ALIAS])


# Cap and usage in one round trip; a project without a billing row has no cap of its own.
_ALLOWANCE_SQL = {
    category: (
        f"SELECT b.limit_{category}, b.subscription_status, "  # noqa: S608 - names from the model
        "(SELECT COALESCE(SUM(u.count), 0) FROM billing_usagecounter u "
        "WHERE u.project_id = %s AND u.category = %s AND u.month = %s) "
        "FROM (SELECT 1 AS one) AS o LEFT JOIN billing_projectbilling b ON b.project_id = %s"
    )
    for category in _CATEGORIES
}


# Projects found without a cap, per category, until when (a monotonic time) this process trusts that: a cap is set
# rarely and read on every send, and without one there is nothing to read the month's usage for. A change to a
# billing row forgets them all in the process that makes it (`caps_forget`); other processes see a new cap within
# BILLING_UNCAPPED_CACHE_SECONDS (docs/billing.md).
_uncapped: dict[tuple[uuid.UUID, str], float] = {}
_UNCAPPED_MAX = 10_000


def caps_forget(**_) -> None:
    _uncapped.clear()


def allowance_read(*, project: Project, category: str, now: datetime) -> Allowance:
    """The category's cap and, when it has one, this month's usage before this send."""
    month = month_of(now)
    key = (project.id, category)
    if _uncapped.get(key, 0.0) > time.monotonic():
        return Allowance(project_id=project.id, category=category, month=month, limit=None, usage=None)
    project_id = _db_value("project", project.id)
    own, status, usage = fetchone_prepared(
        _ALLOWANCE_SQL[category], [project_id, category, _db_value("month", month), project_id]
    )
    limit = effective_limit(own, status)
    if limit is None and settings.BILLING_UNCAPPED_CACHE_SECONDS > 0:
        if len(_uncapped) >= _UNCAPPED_MAX:
            _uncapped.clear()
        _uncapped[key] = time.monotonic() + settings.BILLING_UNCAPPED_CACHE_SECONDS
    return Allowance(project_id=project.id, category=category, month=month, limit=limit, usage=int(usage))


_UPSERT = (
    "INSERT INTO billing_usagecounter (project_id, category, month, shard, count) {values} "
    "ON CONFLICT (project_id, category, month, shard) DO UPDATE SET count = billing_usagecounter.count + excluded.count"
)


# The month's first shard, created at 0 or updated to itself: either way its row is locked until the transaction ends.
_HOLD = _UPSERT.format(values="VALUES (%(usage_project)s, %(usage_category)s, %(usage_month)s, 0, 0)")


def allowance_hold(*, project: Project, category: str, now: datetime) -> Allowance:
    """`allowance_read` for a caller that, in the same transaction, queues only what the cap leaves room for (a
    campaign's fan-out batch). With a cap, the month's first counter shard is locked first and the usage read after
    the lock is held, so two holders read one after the other, the second with what the first counted: a read then
    a write that no other holder can come between. The lock lasts until the caller's transaction ends."""
    allowance = allowance_read(project=project, category=category, now=now)
    if allowance.limit is None:
        return allowance
    params = {**_counter_params(allowance, 0), "usage_shard": 0}
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        execute_prepared(cursor, _HOLD, params)
    return allowance_read(project=project, category=category, now=now)


_COUNTER_ROW = "SELECT %(usage_project)s, %(usage_category)s, %(usage_month)s, %(usage_shard)s, %(usage_count)s"


def counter_statement(allowance: Allowance, count: int, *, after: str) -> tuple[str, dict]:
    """The counter's UPSERT as a statement that adds `count` only if the CTE named `after` returned a row (for a
    data-modifying CTE of the write that inserts the emails), with its named parameters."""
    # `after` is a CTE name of the caller's statement, never input.
    values = f"{_COUNTER_ROW} WHERE EXISTS (SELECT 1 FROM {after})"  # noqa: S608
    return _UPSERT.format(values=values), _counter_params(allowance, count)


def _counter_params(allowance: Allowance, count: int) -> dict:
    return {
        "usage_project": _db_value("project", allowance.project_id),
        "usage_category": allowance.category,
        "usage_month": _db_value("month", allowance.month),
        "usage_shard": random.randrange(SHARDS),
        "usage_count": count,
    }


def usage_add(allowance: Allowance, count: int) -> None:
    """Add `count` emails to the month's counter, in the caller's transaction (that of the email rows)."""
    if count <= 0:
        return
    sql = _UPSERT.format(
        values="VALUES (%(usage_project)s, %(usage_category)s, %(usage_month)s, %(usage_shard)s, %(usage_count)s)"
    )
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        execute_prepared(cursor, sql, _counter_params(allowance, count))


def usage_warn(allowance: Allowance, count: int, *, now: datetime) -> UsageWarning | None:
    """After `count` emails were counted: the month's warning when they took the category to 80 % of its cap
    (once per project, category and month, whoever gets there first)."""
    if allowance.limit is None or count <= 0:
        return None
    threshold = allowance.limit * WARNING_RATIO
    usage = allowance.usage + count
    if not allowance.usage < threshold <= usage:
        return None
    warning = UsageWarning(
        id=uuid.uuid4(),
        project_id=allowance.project_id,
        category=allowance.category,
        month=allowance.month,
        limit=allowance.limit,
        usage=usage,
        created_at=now,
    )
    UsageWarning.objects.bulk_create([warning], ignore_conflicts=True)
    return warning
