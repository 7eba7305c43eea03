"""The base classes every API view derives from: authentication, rate limit, idempotency, atomic writes and
project scoping happen here, once, so concrete views only parse, call a service and serialize."""

from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from rest_framework.permissions import SAFE_METHODS, AllowAny, BasePermission
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView
from rest_framework.viewsets import GenericViewSet

from accounts.http.authentication import (
    ProjectAccess,
    SecretKeyAuthentication,
    UserSessionAuthentication,
    project_access_denied,
)
from accounts.http.idempotency import idempotency_claim, idempotency_finish, idempotency_record_get
from accounts.http.ratelimit import COUNTED_ENVIRON_KEY, address_scope
from accounts.tenancy.keys import KeyKind
from accounts.tenancy.members import role_require
from accounts.tenancy.selectors import membership_get
from core.errors import AuthError, BadRequest, ErrorCode, NotFound, RateLimited, ServiceError
from core.http.validation import validate
from core.ids import uuid_or_none
from core.ratelimit import RateLimitState, client_address, project_scope, rate_limit_hit
from core.time import iso

IDEMPOTENCY_HEADER = "HTTP_IDEMPOTENCY_KEY"


def _valid_idempotency_key(value: str) -> bool:
    return 1 <= len(value) <= 255 and all(" " <= char <= "~" for char in value)


def _rate_limited(state: RateLimitState, whose: str) -> RateLimited:
    return RateLimited(
        f"Rate limit of {state.limit} requests per minute{whose} exceeded. Retry in {state.reset} seconds",
        details={"retryAfter": state.reset},
        headers={"Retry-After": str(state.reset)},
    )


class ApiViewMixin:
    """Request lifecycle shared by all API views.

    1. Authenticate, but hold back an authentication error until the request has been counted: unknown keys
       are rate-limited per client address, known keys (even of the wrong kind) per project.
    2. Check permissions, then, on views with `idempotent = True`, claim the `Idempotency-Key`.
    3. Run unsafe methods in one transaction, so a failed request writes nothing (views whose service is atomic
       on its own, in one statement where it can, set `atomic_writes = False` to save the BEGIN/COMMIT).
    4. On the way out add the rate-limit headers and settle the idempotency record.
    """

    idempotent = False
    atomic_writes = True
    # HTTP method -> the least role a session's member needs for it (docs/accounts.md, "Roles"); MEMBER when not
    # named. The secret key holds every role.
    roles: dict[str, str] = {}
    # Off only for `/health`: a load balancer probes it from a few addresses, many times a minute.
    rate_limited = True
    resource_name = "Resource"
    # HTTP method -> where a request with it belongs instead, given as the 405's suggestion (a guessed list route).
    method_hints: dict[str, str] = {}

    def initial(self, request, *args, **kwargs):
        auth_error = None
        try:
            request.user  # noqa: B018 - runs the authenticators
        except ServiceError as exc:
            # DRF resets the user only for its own exception types; do the same for ours.
            request._not_authenticated()
            auth_error = exc
        self._enforce_rate_limit(request)
        if auth_error is not None:
            raise auth_error
        super().initial(request, *args, **kwargs)
        required = self.roles.get(request.method)
        if required and isinstance(request.auth, ProjectAccess):
            role_require(role=request.auth.role, required=required, action=f"{request.method} {request.path}")
        if self.idempotent:
            self._claim_idempotency_key(request)
        if self.atomic_writes and request.method not in SAFE_METHODS:
            handler_name = request.method.lower()
            handler = getattr(self, handler_name, None)
            if handler is not None:
                setattr(self, handler_name, transaction.atomic(handler))

    def _enforce_rate_limit(self, request) -> None:
        if not self.rate_limited:
            request._request.herald_rate_limit = None
            return
        project_id = getattr(request._request, "herald_project_id", None)
        scope = (
            project_scope(project_id, request._request.herald_key_kind) if project_id else address_scope(request.META)
        )
        # A request already counted in front of Django (accounts.http.fastroute) carries its count here.
        meta = request.META
        state = meta[COUNTED_ENVIRON_KEY] if COUNTED_ENVIRON_KEY in meta else rate_limit_hit(scope)
        request._request.herald_rate_limit = state
        if state is not None and state.exceeded:
            raise _rate_limited(state, "")
        per_address = settings.PUBLIC_KEY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE
        if per_address and project_id and request._request.herald_key_kind == KeyKind.PUBLIC:
            # The public key is in every visitor's browser: one visitor may not spend the whole page's budget.
            address = client_address(meta)
            own = rate_limit_hit(f"{project_scope(project_id, KeyKind.PUBLIC)}:{address}", limit=per_address)
            if own is not None and own.exceeded:
                request._request.herald_rate_limit = own
                raise _rate_limited(own, " from one client address")

    def _claim_idempotency_key(self, request) -> None:
        key = request.META.get(IDEMPOTENCY_HEADER)
        request._request.herald_idempotency = None
        if key is None:
            return
        if not _valid_idempotency_key(key):
            raise BadRequest(
                "Idempotency-Key must be 1 to 255 printable ASCII characters",
                details={"header": "Idempotency-Key"},
            )
        project = request.auth.project
        record = idempotency_claim(project=project, key=key, method=request.method, path=request.path)
        if record is None:
            original = idempotency_record_get(project=project, key=key)
            raise ServiceError(
                f'Idempotency-Key "{key}" has already been used',
                code=ErrorCode.IDEMPOTENCY_KEY_REUSED,
                status=409,
                details={
                    "key": key,
                    "originalRequest": f"{original.method} {original.path}" if original else None,
                    "originalRequestAt": iso(original.created_at) if original else None,
                    "originalStatusCode": original.status_code if original else None,
                },
                suggestion="Use a new Idempotency-Key for a new request",
            )
        request._request.herald_idempotency = record

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        state = getattr(request._request, "herald_rate_limit", None)
        if state is not None and (request.auth is not None or response.status_code == 429):
            for name, value in state.headers().items():
                response[name] = value
        record = getattr(request._request, "herald_idempotency", None)
        if record is not None:
            idempotency_finish(record=record, status_code=response.status_code)
        return response


class ApiView(ApiViewMixin, APIView):
    """A single-purpose endpoint (health, config, a dashboard action)."""


class KeyOnlyView(ApiView):
    """A `/v1/*` endpoint: the secret key only, never a browser session."""

    authentication_classes = [SecretKeyAuthentication]


# An endpoint that is one function: `handler(project, values, payload) -> response data`, called with what
# `input_serializer` validated and the body as sent. `accounts.http.fastroute` answers a successful request to the
# same endpoint in front of Django with this view's serializer, handler, key and transaction, so the two cannot
# answer differently. The handler builds its data with the endpoint's output serializer (`core.http.output`).
# (No docstring: the OpenAPI schema describes a view with the nearest docstring of its class.)
class HandlerView(KeyOnlyView):
    input_serializer: type[Serializer]
    handler: Callable  # a staticmethod: (Project, dict, dict) -> dict

    def handled(self, request) -> Response:
        values = validate(self.input_serializer, request.data)
        return Response(self.handler(request.auth.project, values, request.data))


class PublicApiView(ApiView):
    """An endpoint that needs no key; still rate-limited per client address."""

    authentication_classes: list = []
    permission_classes = [AllowAny]


class LoggedIn(BasePermission):
    def has_permission(self, request, view) -> bool:
        if request.user is None:
            raise AuthError(
                "Not logged in: this endpoint needs the session cookie set by POST /auth/login",
                code=ErrorCode.MISSING_AUTH,
            )
        return True


class AccountView(ApiView):
    """An account endpoint: the logged-in user's session alone (`request.user`), no key."""

    authentication_classes = [UserSessionAuthentication]
    permission_classes = [LoggedIn]


class MemberProjectView(AccountView):
    """An account endpoint about the project in its path (`<project_id>`): the user must be a member of it (403
    PROJECT_ACCESS_DENIED, the same for a project that does not exist) with the role `roles` names for the method
    (403 FORBIDDEN). A new one is a subclass with `roles` and its methods, which find `self.membership` and
    `self.project`, and a route: `path("users/@me/projects/<project_id>/...", View.as_view())`."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        project_id = kwargs["project_id"]
        membership = membership_get(user=request.user, project_id=project_id)
        if membership is None:
            raise project_access_denied(project_id)
        self.membership, self.project = membership, membership.project
        required = self.roles.get(request.method)
        if required:
            role_require(role=membership.role, required=required, action=f"{request.method} {request.path}")


class ProjectScopedViewSet(ApiViewMixin, GenericViewSet):
    """A resource that belongs to a project. The project filter cannot be skipped: subclasses may not override
    `get_queryset` or `get_object` and refine the scoped queryset in `refine_queryset` instead."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("get_queryset", "get_object"):
            if name in cls.__dict__:
                raise TypeError(f"{cls.__name__} may not override {name}; use refine_queryset")

    @property
    def project(self):
        return self.request.auth.project

    def refine_queryset(self, queryset):
        return queryset

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset.none()
        return self.refine_queryset(self.queryset.filter(project_id=self.project.id))

    def get_object(self):
        value = self.kwargs[self.lookup_url_kwarg or self.lookup_field]
        if self.lookup_field == "pk" and uuid_or_none(value) is None:
            raise NotFound(self.resource_name, value)
        obj = self.get_queryset().filter(**{self.lookup_field: value}).first()
        if obj is None:
            raise NotFound(self.resource_name, value)
        return obj
