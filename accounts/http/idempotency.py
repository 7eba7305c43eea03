"""The `Idempotency-Key` records the base views claim and settle (docs/api.md, "Idempotency"): one per project and
key, kept for IDEMPOTENCY_KEY_TTL_HOURS."""

from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import IdempotencyRecord, Project
from core.batches import purge


def idempotency_record_get(*, project: Project, key: str) -> IdempotencyRecord | None:
    return IdempotencyRecord.objects.filter(project=project, key=key).first()


def idempotency_claim(*, project: Project, key: str, method: str, path: str) -> IdempotencyRecord | None:
    """Claim `key` for this request; return None when it is taken and still alive.

    1. Insert the record; the unique constraint lets exactly one of concurrent claimers win.
    2. On a conflict, a record past its lifetime, or one still in flight (no status) claimed longer than
       IDEMPOTENCY_LEASE_SECONDS ago, is deleted and the insert tried once more: an expired key is free even before
       the purge task has run, and the key of a request whose process was killed before it answered is free for a
       retry once that request can no longer be running.
    """
    now = timezone.now()
    expires_at = now + timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS)
    abandoned = Q(status_code__isnull=True, created_at__lte=now - timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS))
    for _attempt in range(2):
        try:
            with transaction.atomic():
                return IdempotencyRecord.objects.create(
                    project=project, key=key, method=method, path=path[:500], created_at=now, expires_at=expires_at
                )
        except IntegrityError:
            deleted, _ = IdempotencyRecord.objects.filter(
                Q(expires_at__lte=now) | abandoned, project=project, key=key
            ).delete()
            if not deleted:
                return None
    return None


@lru_cache(maxsize=4)
def _record_once_sql(vendor: str) -> str:
    quote = connection.ops.quote_name
    table = quote(IdempotencyRecord._meta.db_table)
    columns = ("project_id", "key", "method", "path", "status_code", "created_at", "expires_at")
    updated = ", ".join(f"{quote(name)} = excluded.{quote(name)}" for name in columns[2:])
    names, values = ", ".join(map(quote, columns)), ", ".join(["%s"] * len(columns))
    # Names quoted from the model, values as parameters.
    return (
        f"INSERT INTO {table} ({names}) VALUES ({values}) "  # noqa: S608
        f"ON CONFLICT ({quote('project_id')}, {quote('key')}) DO UPDATE SET {updated} "
        f"WHERE {table}.{quote('expires_at')} <= %s RETURNING 1"
    )


def idempotency_record_once(*, project: Project, key: str, method: str, path: str, status_code: int) -> bool:
    """Record `key` as answered (`status_code`, `path`) in one statement, inside the caller's transaction: the
    claim and the answer together, for work that is answered only if it commits (an SMTP submission). False when a
    live record holds the key: committed, or committing concurrently (the insert waits for that transaction's end,
    then finds it). A record past its lifetime is taken over in the same statement. The record rolls back with the
    caller's work, so there is never one without the work, nor one without an answer (no lease applies)."""
    now = timezone.now()
    expires_at = now + timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS)
    project_id = IdempotencyRecord._meta.get_field("project").get_db_prep_value(project.pk, connection)
    stamp = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            _record_once_sql(connection.vendor),
            [project_id, key, method, path[:500], status_code, stamp(now), stamp(expires_at), stamp(now)],
        )
        return cursor.fetchone() is not None


def idempotency_finish(*, record: IdempotencyRecord, status_code: int) -> None:
    """Keep the key after a 2xx or 5xx; release it after a 4xx so the client can fix the request and retry."""
    if 400 <= status_code < 500:
        IdempotencyRecord.objects.filter(pk=record.pk).delete()
    else:
        IdempotencyRecord.objects.filter(pk=record.pk).update(status_code=status_code)


def idempotency_purge_expired(
    *, project_id=None, batch_size: int = 1000, max_batches: int | None = None, dry_run: bool = False
) -> int:
    """Expired keys are already free (claims ignore them); deleting them keeps the table small."""
    expired = IdempotencyRecord.objects.filter(expires_at__lte=timezone.now())
    if project_id is not None:
        expired = expired.filter(project_id=project_id)
    return purge(expired, order_by=("expires_at",), batch_size=batch_size, max_batches=max_batches, dry_run=dry_run)
