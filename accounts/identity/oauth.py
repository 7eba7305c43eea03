"""Sign-in with GitHub or Google: the OAuth 2 authorization-code flow with state and PKCE (docs/accounts.md,
"Signing in with GitHub or Google").

Authlib's client speaks the protocol (authorization URL, PKCE challenge, token exchange, the token on the user-info
call); this module keeps the flow's secrets in the browser's session between the two legs and turns the provider's
answer into an address and whether the provider verified it. `users.user_from_provider` decides who that is.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from django.conf import settings
from django.utils.crypto import constant_time_compare

from accounts.identity.users import user_from_provider
from accounts.models import User
from core.errors import ErrorCode, FeatureDisabled, ServiceError


@dataclass(frozen=True)
class Identity:
    email: str
    verified: bool


def _github_identity(client: OAuth2Session) -> Identity:
    # The account's addresses with their verification (the profile's own `email` is whatever the user made public).
    response = client.get(settings.GITHUB_EMAILS_URL, headers={"Accept": "application/vnd.github+json"})
    response.raise_for_status()
    primary = next((entry for entry in response.json() if entry.get("primary")), None)
    if primary is None:
        raise LookupError("no primary address")
    return Identity(email=primary["email"], verified=primary.get("verified") is True)


def _google_identity(client: OAuth2Session) -> Identity:
    response = client.get(settings.GOOGLE_USERINFO_URL)
    response.raise_for_status()
    info = response.json()
    return Identity(email=info["email"], verified=info.get("email_verified") is True)


@dataclass(frozen=True)
class Provider:
    name: str
    title: str
    scope: str
    identity: Callable[[OAuth2Session], Identity]

    def setting(self, suffix: str) -> str:
        return getattr(settings, f"{self.name.upper()}_{suffix}")

    @property
    def configured(self) -> bool:
        return bool(self.setting("CLIENT_ID") and self.setting("CLIENT_SECRET"))


PROVIDERS = {
    "github": Provider("github", "GitHub", "user:email", _github_identity),
    "google": Provider("google", "Google", "openid email", _google_identity),
}


def oauth_providers() -> dict[str, bool]:
    """Which sign-in providers are configured (client id and secret both set)."""
    return {name: provider.configured for name, provider in PROVIDERS.items()}


class OAuthFailed(ServiceError):
    """A sign-in through a provider that did not end with a user: the dashboard's login page shows `code`."""

    status = 400


def _provider(name: str) -> Provider:
    provider = PROVIDERS[name]
    if not provider.configured:
        # 404 rather than FeatureDisabled's 501: to the browser following the link, the page is not there.
        raise FeatureDisabled(f"Sign-in with {provider.title} is not configured on this installation", status=404)
    return provider


def _client(provider: Provider) -> OAuth2Session:
    return OAuth2Session(
        provider.setting("CLIENT_ID"),
        provider.setting("CLIENT_SECRET"),
        scope=provider.scope,
        redirect_uri=f"{settings.API_URL}/oauth/{provider.name}/callback",
        code_challenge_method="S256",
        default_timeout=settings.OAUTH_TIMEOUT_SECONDS,
    )


def _session_key(provider: Provider) -> str:
    return f"oauth:{provider.name}"


def oauth_start(*, provider: str, session) -> str:
    """The provider's authorization URL to send the browser to. Its state (against forged callbacks) and PKCE
    verifier (against a stolen code) stay in the browser's session, on the server, for the callback."""
    chosen = _provider(provider)
    verifier = generate_token(64)
    with _client(chosen) as client:
        url, state = client.create_authorization_url(chosen.setting("AUTHORIZE_URL"), code_verifier=verifier)
    session[_session_key(chosen)] = {"state": state, "verifier": verifier}
    return url


def oauth_finish(*, provider: str, session, params: Mapping[str, str]) -> User:
    """The user a provider's callback signs in.

    1. The flow's state and verifier leave the session whatever happens: a callback is good once.
    2. The person declined at the provider (`error` in the query): OAUTH_DENIED.
    3. A state other than the one this browser was given (a forged or replayed callback): OAUTH_STATE_INVALID.
    4. The code is exchanged with the verifier and the address read; a provider that cannot be reached, answers an
       error or something unreadable: OAUTH_PROVIDER_ERROR.
    5. The address decides the account (`users.user_from_provider`).
    """
    chosen = _provider(provider)
    pending = session.pop(_session_key(chosen), None)
    if params.get("error"):
        # The provider's own error text is not repeated: it came in the query, which anyone can write.
        raise OAuthFailed(f"Sign-in with {chosen.title} was cancelled", code=ErrorCode.OAUTH_DENIED)
    state, code = params.get("state") or "", params.get("code") or ""
    if not pending or not code or not constant_time_compare(state, pending["state"]):
        raise OAuthFailed(
            f"This sign-in with {chosen.title} was not started from this browser, or was already used. Try again",
            code=ErrorCode.OAUTH_STATE_INVALID,
        )
    try:
        with _client(chosen) as client:
            client.fetch_token(chosen.setting("TOKEN_URL"), code=code, code_verifier=pending["verifier"])
            identity = chosen.identity(client)
    except (requests.RequestException, OAuthError, ValueError, LookupError, TypeError, AttributeError) as exc:
        # ValueError: not JSON; the others: JSON of another shape than the provider documents.
        raise OAuthFailed(
            f"{chosen.title} could not complete the sign-in ({type(exc).__name__}). Try again later",
            code=ErrorCode.OAUTH_PROVIDER_ERROR,
            status=502,
        ) from None
    return user_from_provider(email=identity.email, verified=identity.verified, provider=chosen.title)
