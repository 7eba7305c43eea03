"""Leases (`config.models.Lease`): one process of several does a job alone, and another takes over when it stops.

Each change is one conditional statement that commits on its own, and expiry is judged on the database's clock
(`Now()`), never a host's: hosts whose clocks disagree still agree on who holds a lease. No session state is kept
(no advisory lock), so this works on SQLite, on PostgreSQL and behind PgBouncer in transaction mode alike.
"""

from datetime import timedelta

from django.db.models import BooleanField, Case, DateTimeField, Exists, ExpressionWrapper, F, Q, QuerySet, When
from django.db.models.functions import Now

from config.models import Lease

# celery-beat's lease: the beat holding it schedules (config/beat.py).
BEAT_LEASE = "beat"


def _in(seconds: float) -> ExpressionWrapper:
    return ExpressionWrapper(Now() + timedelta(seconds=seconds), output_field=DateTimeField())


def lease_take(*, name: str, holder: str, seconds: float) -> bool:
    """Takes the lease for `holder` for `seconds` from now, or renews it: refused (False) while another holder's
    has not expired. A holder that takes it anew (its own expired one included) starts a new `acquired_at`."""
    held = Q(holder=holder, expires_at__gt=Now())
    claim = Lease.objects.filter(Q(name=name) & (held | Q(expires_at__isnull=True) | Q(expires_at__lte=Now())))
    changes = {
        "holder": holder,
        "acquired_at": Case(When(held, then=F("acquired_at")), default=Now()),
        "renewed_at": Now(),
        "expires_at": _in(seconds),
    }
    if claim.update(**changes):
        return True
    if Lease.objects.filter(name=name).exists():
        return False
    # The first take ever: the row is made free, and the take races with any other's as usual.
    Lease.objects.bulk_create([Lease(name=name)], ignore_conflicts=True)
    return bool(claim.update(**changes))


def lease_release(*, name: str, holder: str) -> bool:
    """Ends `holder`'s lease at once, so that another takes it without waiting for it to expire. False when it was
    not held by `holder` (expired, taken by another)."""
    # Renewed and expired at the same instant: what tells a release from an expiry (the doctor says which).
    ended = Lease.objects.filter(name=name, holder=holder, expires_at__gt=Now()).update(
        expires_at=Now(), renewed_at=Now()
    )
    return bool(ended)


def lease_held(*, name: str, holder: str) -> Exists:
    """A condition for a statement that must change rows only while `holder` holds the lease: judged by the same
    statement, so a holder whose lease expired meanwhile changes nothing."""
    return Exists(Lease.objects.filter(name=name, holder=holder, expires_at__gt=Now()))


def lease_annotated(leases: QuerySet) -> QuerySet:
    """`leases` with `now`, the database's clock, and `expired` judged on it."""
    return leases.annotate(
        now=Now(),
        expired=ExpressionWrapper(Q(expires_at__isnull=True) | Q(expires_at__lte=Now()), output_field=BooleanField()),
    )


def lease_get(*, name: str) -> Lease | None:
    """The lease, annotated (`lease_annotated`), or None when nobody has ever taken it."""
    return lease_annotated(Lease.objects.filter(name=name)).first()
