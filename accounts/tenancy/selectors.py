import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection
from django.db.models import QuerySet

from accounts.models import Membership, Project, User
from accounts.tenancy import keycache, registry
from accounts.tenancy.keys import KeyKind, hash_key, kind_of
from core.ids import uuid_or_none
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


def project_has_member_email(*, project: Project, email: str) -> bool:
    """Whether a user with this address (any case) is a member of the project."""
    return Membership.objects.filter(project=project, user__email__iexact=email.strip()).exists()


def memberships_of(*, user) -> QuerySet[Membership]:
    """The user's projects, as memberships, newest project first."""
    return Membership.objects.filter(user=user).select_related("project").order_by("-project__created_at")


_SESSION_SQL = (
    "SELECT {fields}, m.role AS member_role, u.password AS member_password, u.is_active AS member_active "
    "FROM {membership} m JOIN {project} p ON p.id = m.project_id JOIN {user} u ON u.id = m.user_id "
    "WHERE m.user_id = %s AND m.project_id = %s"
)


def session_membership(*, user_id, project_id) -> Membership | None:
    """The membership of a session's user in a project, with the project (its authentication fields) and the user
    (the fields that verify the session: password hash and is_active), in one indexed query. A dashboard request
    runs this where a key-authenticated one finds its project in the key cache: plain SQL skips the ORM's
    compilation of the three-table join, which cost more than the query (bench/session_auth.py)."""
    user_id, project_id = uuid_or_none(user_id), uuid_or_none(project_id)
    if user_id is None or project_id is None:
        return None
    sql = _SESSION_SQL.format(
        fields=", ".join(f"p.{field}" for field in _PROJECT_AUTH_FIELDS),
        membership=Membership._meta.db_table,
        project=Project._meta.db_table,
        user=User._meta.db_table,
    )
    uuid_field = Project._meta.pk
    params = [uuid_field.get_db_prep_value(value, connection) for value in (user_id, project_id)]
    project = next(iter(Project.objects.raw(sql, params)), None)
    if project is None:
        return None
    user = User(id=user_id, password=project.member_password, is_active=project.member_active)
    return Membership(user=user, project=project, role=project.member_role)


def membership_get(*, user, project_id) -> Membership | None:
    """The user's membership of a project (with the project), or None when either is not so: one answer for
    "no such project" and "not a member", so that project ids cannot be probed."""
    project_id = uuid_or_none(project_id)
    if project_id is None or user is None:
        return None
    return Membership.objects.select_related("project").filter(user=user, project_id=project_id).first()


@dataclass(frozen=True)
class ProjectRow:
    """A project as its member sees it in the account endpoints (`role` is the member's)."""

    id: object
    name: str
    role: str
    public_key: str
    disabled: bool
    default_sender_domain: str | None
    created_at: object
    tracking_mode: str
    webhook_secret: str | None = None
    secret_key: str | None = None


def project_row(membership: Membership, default_sender_domain: str | None = None, **extra) -> ProjectRow:
    project = membership.project
    return ProjectRow(
        id=project.id,
        name=project.name,
        role=membership.role,
        public_key=project.public_key,
        disabled=project.disabled,
        default_sender_domain=default_sender_domain,
        created_at=project.created_at,
        tracking_mode=project.tracking_mode,
        **extra,
    )


def project_rows_of(*, user) -> list[ProjectRow]:
    memberships = list(memberships_of(user=user))
    domains = registry.default_sender_domains([membership.project_id for membership in memberships])
    return [project_row(membership, domains.get(membership.project_id)) for membership in memberships]
