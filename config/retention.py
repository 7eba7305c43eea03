"""Retention: every rule of what the service deletes (or empties) after a time, in one list (docs/operations.md
"Retention"). Each rule is a function of the app that owns the data; the hourly `apply-retention` beat task and
`manage.py purge` both run them through `retention_apply`."""

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from accounts.http.idempotency import idempotency_purge_expired
from accounts.jobs.services import jobs_purge_finished
from contacts.models import Event
from contacts.services import events_purge_old, import_uploads_purge_finished
from core.partitions import is_partitioned, partitions_ensure
from messaging.feedback.services import receipts_purge
from messaging.insights.retention import email_bodies_clear, emails_purge_old
from messaging.models import Email


@dataclass(frozen=True)
class Rule:
    name: str
    # What the count means: "<count> <what>".
    what: str
    # The setting of its age, and the unit; an age of 0 turns the rule off. None: the rule has no age of its own.
    setting: str | None
    unit: str
    apply: Callable[..., int]

    @property
    def age(self) -> int | None:
        return None if self.setting is None else getattr(settings, self.setting)

    @property
    def enabled(self) -> bool:
        return self.age is None or self.age > 0


RULES = (
    Rule("email-bodies", "rendered email bodies emptied", "EMAIL_BODY_RETENTION_DAYS", "days", email_bodies_clear),
    Rule(
        "webhook-receipts",
        "provider webhook receipts deleted",
        "FEEDBACK_RECEIPT_RETENTION_DAYS",
        "days",
        receipts_purge,
    ),
    Rule(
        "idempotency-keys",
        "expired idempotency keys deleted",
        "IDEMPOTENCY_KEY_TTL_HOURS",
        "hours",
        idempotency_purge_expired,
    ),
    Rule("jobs", "finished jobs deleted (with their uploads)", "JOB_RETENTION_DAYS", "days", jobs_purge_finished),
    Rule("import-uploads", "uploads of finished imports deleted", None, "", import_uploads_purge_finished),
    Rule("events", "events deleted", "EVENT_RETENTION_DAYS", "days", events_purge_old),
    Rule("emails", "email rows deleted", "EMAIL_RETENTION_DAYS", "days", emails_purge_old),
)


def retention_apply(
    *,
    project_id=None,
    dry_run: bool = False,
    max_batches: int | None = None,
    rules: tuple[Rule, ...] = RULES,
    on_rule: Callable[[Rule, int | None], None] | None = None,
) -> dict[str, int | None]:
    """Run every rule (each in its own batches), in the order of RULES; returns rule name -> rows removed (or, with
    `dry_run`, that would be), None for a rule turned off. `on_rule` is told after each rule (a command's
    progress)."""
    done: dict[str, int | None] = {}
    for rule in rules:
        if not rule.enabled:
            done[rule.name] = None
        else:
            done[rule.name] = rule.apply(
                project_id=project_id,
                batch_size=settings.RETENTION_BATCH_SIZE,
                max_batches=max_batches,
                dry_run=dry_run,
            )
        if on_rule is not None:
            on_rule(rule, done[rule.name])
    return done


# The tables partitioned by month on PostgreSQL (docs/scaling.md "Partitioned history"), whose months the
# `ensure-partitions` beat entry makes ahead and the doctor watches.
PARTITIONED_TABLES = (Event._meta.db_table, Email._meta.db_table)


def partitions_ensure_all(*, now=None) -> dict[str, list[str]]:
    """Make the coming months' partitions of every partitioned table (none on SQLite); returns the names made."""
    now = now or timezone.now()
    return {table: partitions_ensure(table=table, now=now) for table in PARTITIONED_TABLES if is_partitioned(table)}
