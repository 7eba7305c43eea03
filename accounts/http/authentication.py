"""Who is calling, and for which project: bearer API keys, and the dashboard's browser session.

Each endpoint names what it accepts. Project endpoints take the secret key or, from a dashboard, the session cookie
with the project in `X-Project-Id` (`/v1/*` take keys only); account endpoints take the session alone. However
the project was named, `project_admit` decides whether the request may act for it, and `request.auth` is then the
same `ProjectAccess` (docs/accounts.md, "Sessions").
"""

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, login
from django.middleware.csrf import get_token
from django.utils.crypto import constant_time_compare
from rest_framework.authentication import BaseAuthentication, CSRFCheck

from accounts.http.ratelimit import COUNTED_ENVIRON_KEY
from accounts.models import Membership, Project, User
from accounts.tenancy import sessioncache
from accounts.tenancy.keys import KeyKind
from accounts.tenancy.selectors import api_key_lookup, session_membership
from core.errors import AuthError, BadRequest, ErrorCode, ServiceError
from core.http.middleware import set_project_id
from core.ratelimit import Window

_KEY_NAMES = {KeyKind.PUBLIC: "a public key (pk_)", KeyKind.SECRET: "a secret key (sk_)"}


@dataclass(frozen=True)
class ProjectPrincipal:
    """`request.user` of a key-authenticated request: the project acting through its key."""

    project: Project
    key_kind: KeyKind
    is_authenticated: bool = True


def bearer_token(header: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value, or None when it is not one."""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@dataclass(frozen=True)
class ProjectAccess:
    """`request.auth` of a project endpoint: the project, the key budget the request counts in (a session counts in
    the secret key's: it calls the same endpoints), and, for a session, the member's membership (its role)."""

    project: Project
    kind: KeyKind
    membership: Membership | None = None

    @property
    def role(self) -> str:
        # The secret key holds every power a project endpoint offers.
        return self.membership.role if self.membership else Membership.Role.OWNER


def project_admit(request, project: Project, kind: KeyKind, membership: Membership | None = None) -> ProjectAccess:
    """The one decision on acting for a project, whichever credential named it: the rate limit counts the request
    against the project from here on, even if it fails, and a disabled project is refused."""
    request._request.herald_project_id = project.id
    request._request.herald_key_kind = kind
    set_project_id(project.id)
    if project.disabled:
        reason = f" ({project.disabled_reason})" if project.disabled_reason else ""
        raise ServiceError(f"This project is disabled{reason}", code=ErrorCode.PROJECT_DISABLED, status=403)
    return ProjectAccess(project=project, kind=kind, membership=membership)


def project_access_denied(project_id) -> ServiceError:
    return ServiceError(
        f'You are not a member of project "{project_id}"',
        code=ErrorCode.PROJECT_ACCESS_DENIED,
        status=403,
        details={"projectId": str(project_id)},
    )


def _enforce_csrf(request) -> None:
    """A cookie-authenticated unsafe request must echo the csrftoken cookie in X-CSRFToken (403 CSRF_FAILED)."""
    check = CSRFCheck(lambda _request: None)
    check.process_request(request._request)
    reason = check.process_view(request._request, None, (), {})
    if reason:
        raise ServiceError(
            f"CSRF verification failed: {reason.rstrip('.')}. Send the csrftoken cookie's value in the X-CSRFToken header",
            code=ErrorCode.CSRF_FAILED,
            status=403,
        )


def session_user(request) -> User | None:
    """The logged-in user of the request's session cookie (Django's session and authentication middleware), or
    None; an authenticated unsafe request must carry the CSRF token."""
    user = getattr(request._request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    _enforce_csrf(request)
    return user


def session_open(http_request, user: User) -> None:
    """Log `user` in on the browser of a Django request (the API's sign-up and logins, the account pages): a new
    session key (no fixation) and a new CSRF token, which the csrftoken cookie carries to the dashboard."""
    login(http_request, user, backend="django.contrib.auth.backends.ModelBackend")
    get_token(http_request)


def _session_verified(request, user: User) -> bool:
    """Whether the session was opened with the user's current password (a reset or change ends every session),
    as Django's own `get_user` decides, which this path replaces to save its query."""
    session_hash = request._request.session.get(HASH_SESSION_KEY)
    if user.is_active and session_hash:
        hashes = (user.get_session_auth_hash(), *user.get_session_auth_fallback_hash())
        if any(constant_time_compare(session_hash, known) for known in hashes):
            return True
    request._request.session.flush()
    return False


class SessionAuthentication(BaseAuthentication):
    """The dashboard's session cookie on a project endpoint, with the project in `X-Project-Id`: 400 without it,
    403 PROJECT_ACCESS_DENIED when the user is not a member (or there is no such project).

    With Redis, the session's access to the project is found in the shared session cache (`accounts.tenancy.sessioncache`)
    and the request counted in the rate limit in the same round trip, as a key request finds its project: the
    session itself is not read. Otherwise (and to fill the cache) the user and the membership come from one query
    (`session_membership`), not from Django's lazy `request.user` and a second query. Django's path still answers
    the rare requests that name no project or one the user is not a member of, to tell a dead session (401) from a
    refused project (400, 403)."""

    def authenticate(self, request):
        session = getattr(request._request, "session", None)
        if session is None:
            return None
        project_id = request.META.get("HTTP_X_PROJECT_ID", "").strip()
        if project_id and sessioncache.enabled():
            cached = self._cached(request, session, project_id)
            if cached is not None:
                return cached
        user_id = session.get(SESSION_KEY)
        if user_id is None:
            return None
        _enforce_csrf(request)
        seen = sessioncache.generations(user_id, project_id) if project_id and sessioncache.enabled() else None
        membership = session_membership(user_id=user_id, project_id=project_id) if project_id else None
        if membership is None:
            user = session_user(request)
            if user is None:
                return None
            if not project_id:
                raise BadRequest(
                    "X-Project-Id header is required with a session cookie", details={"header": "X-Project-Id"}
                )
            raise project_access_denied(project_id)
        if not _session_verified(request, membership.user):
            return None
        if seen is not None:
            sessioncache.remember(session, membership, seen)
        return membership.user, project_admit(request, membership.project, KeyKind.SECRET, membership)

    @staticmethod
    def _cached(request, session, project_id: str):
        """The shared cache's answer (accounts.tenancy.sessioncache): the session is not read, and the request is counted in
        the rate limit in the same round trip, as a key request is."""
        window = Window.now() if settings.API_RATE_LIMIT_PER_MINUTE > 0 else None
        membership = sessioncache.cached_membership(session.session_key, project_id, window)
        if membership is None:
            return None
        _enforce_csrf(request)
        session.accessed = True  # the answer depends on the cookie (Vary: Cookie), as when the session is read
        if window is not None and window.count is not None:
            request.META[COUNTED_ENVIRON_KEY] = window.state()
        return membership.user, project_admit(request, membership.project, KeyKind.SECRET, membership)

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class UserSessionAuthentication(BaseAuthentication):
    """The session cookie alone, on account endpoints (`/users/@me...`, `/projects/:id/members...`):
    `request.user` is the user; which project, if any, comes from the path (`accounts.http.views.MemberProjectView`)."""

    def authenticate(self, request):
        user = session_user(request)
        return None if user is None else (user, None)

    def authenticate_header(self, request) -> str:
        return 'Session realm="dashboard"'


class ApiKeyAuthentication(BaseAuthentication):
    required_kind: KeyKind = KeyKind.SECRET

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        token = bearer_token(header)
        if token is None:
            raise AuthError(
                "Malformed Authorization header. Use `Authorization: Bearer <API key>`", code=ErrorCode.MISSING_AUTH
            )
        match = api_key_lookup(token=token)
        if match is None:
            raise AuthError("Invalid API key", code=ErrorCode.UNAUTHORIZED)
        if match.kind is not self.required_kind:
            # Counted against the key's project all the same.
            request._request.herald_project_id = match.project.id
            request._request.herald_key_kind = match.kind
            raise AuthError(
                f"This endpoint requires {_KEY_NAMES[self.required_kind]}, not {_KEY_NAMES[match.kind]}",
                code=ErrorCode.INVALID_API_KEY,
            )
        access = project_admit(request, match.project, match.kind)
        return ProjectPrincipal(project=match.project, key_kind=match.kind), access

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class SecretKeyAuthentication(ApiKeyAuthentication):
    required_kind = KeyKind.SECRET


class PublicKeyAuthentication(ApiKeyAuthentication):
    required_kind = KeyKind.PUBLIC


# Registers the OpenAPI descriptions of the two key schemes (drf-spectacular finds extensions by import).
import accounts.http.schema  # noqa: E402, F401
