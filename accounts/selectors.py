import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from accounts import keycache
from accounts.keys import KeyKind, hash_key, kind_of
from accounts.models import IdempotencyRecord, Membership, Project
from core.ratelimit import Window

_PROJECT_AUTH_FIELDS = keycache.FIELDS
# Every API request runs this lookup: plain SQL on the unique index skips the ORM's query compilation, which
# costs three times the query itself here (0.35 ms of 0.47 ms on PostgreSQL).
_AUTH_SQL = "SELECT {fields} FROM {table} WHERE {column} = %s"


def _project_by(column: str, value: str) -> Project | None:
    sql = _AUTH_SQL.format(fields=", ".join(_PROJECT_AUTH_FIELDS), table=Project._meta.db_table, column=column)
    return next(iter(Project.objects.raw(sql, [value])), None)


@dataclass(frozen=True)
class ApiKeyMatch:
    project: Project
    kind: KeyKind


def _load(kind: KeyKind, token: str, digest: str, window: Window | None) -> Project | None:
    if keycache.enabled():
        cached = keycache.cached_project(digest, window, kind)
        if isinstance(cached, Project):
            return cached
    else:
        cached = keycache.STALE
    project = _project_by("public_key", token) if kind is KeyKind.PUBLIC else _project_by("secret_key_hash", digest)
    if project is not None and cached is None:
        keycache.remember(digest, project)
    return project


def api_key_lookup(*, token: str, window: Window | None = None) -> ApiKeyMatch | None:
    """Find the project a key belongs to: from the shared key cache, else with one indexed query. None for an
    unknown or malformed key. With a rate-limit `window`, a key found in the cache is counted in its project's
    window in the same round trip (`window.count`; left None otherwise)."""
    kind = kind_of(token)
    if kind is None:
        return None
    digest = hash_key(token)
    project = _load(kind, token, digest, window)
    if project is None:
        return None
    if kind is KeyKind.PUBLIC:
        matches = hmac.compare_digest(project.public_key, token)
    else:
        matches = hmac.compare_digest(project.secret_key_hash, digest)
    return ApiKeyMatch(project=project, kind=kind) if matches else None


def project_ids_in_scope(*, project_id=None) -> Iterable:
    """The project ids an operator's run covers: the one given, or every project's."""
    return [project_id] if project_id is not None else Project.objects.values_list("id", flat=True)


def idempotency_record_get(*, project: Project, key: str) -> IdempotencyRecord | None:
    return IdempotencyRecord.objects.filter(project=project, key=key).first()


def project_has_member_email(*, project: Project, email: str) -> bool:
    """Whether a user with this address (any case) is a member of the project."""
    return Membership.objects.filter(project=project, user__email__iexact=email.strip()).exists()
