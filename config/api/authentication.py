"""Bearer API keys. Each endpoint names the kind of key it takes; the project always comes from the key."""

from dataclasses import dataclass

from rest_framework.authentication import BaseAuthentication

from accounts.keys import KeyKind
from accounts.models import Project
from accounts.selectors import api_key_lookup
from core.errors import AuthError, ErrorCode, ServiceError

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
        # Known from here on: the rate limit counts this request against the key's project, even if it fails.
        request._request.herald_project_id = match.project.id
        request._request.herald_key_kind = match.kind
        if match.kind is not self.required_kind:
            raise AuthError(
                f"This endpoint requires {_KEY_NAMES[self.required_kind]}, not {_KEY_NAMES[match.kind]}",
                code=ErrorCode.INVALID_API_KEY,
            )
        if match.project.disabled:
            reason = f" ({match.project.disabled_reason})" if match.project.disabled_reason else ""
            raise ServiceError(f"This project is disabled{reason}", code=ErrorCode.PROJECT_DISABLED, status=403)
        return ProjectPrincipal(project=match.project, key_kind=match.kind), match

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class SecretKeyAuthentication(ApiKeyAuthentication):
    required_kind = KeyKind.SECRET


class PublicKeyAuthentication(ApiKeyAuthentication):
    required_kind = KeyKind.PUBLIC


# Registers the OpenAPI descriptions of the two key schemes (drf-spectacular finds extensions by import).
import config.api.schema  # noqa: E402, F401
