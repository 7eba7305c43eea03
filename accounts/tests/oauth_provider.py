"""A stand-in OAuth 2 provider on loopback with GitHub's and Google's endpoints (authorize, token, user info), so
that the sign-in runs through the real client, over real HTTP, up to the machine's edge.

The authorize endpoint plays the person at the provider: it approves at once (or declines, with `denies`) and
redirects to the `redirect_uri` with a code bound to the PKCE challenge; the token endpoint checks the client's
credentials, the code, the redirect URI and the verifier as a provider does.
"""

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from urllib.parse import urlencode

from conftest import json_server

CLIENT_ID, CLIENT_SECRET = "client-id", "client-secret"


@dataclass
class FakeProvider:
    base: str
    # The provider's account: addresses (GitHub's list form) as the user-info endpoints report them.
    emails: list[dict] = field(
        default_factory=lambda: [{"email": "ada@example.test", "primary": True, "verified": True}]
    )
    denies: bool = False
    failing: bool = False
    codes: dict[str, dict] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, dict]] = field(default_factory=list)

    def settings(self, settings) -> None:
        for name in ("GITHUB", "GOOGLE"):
            setattr(settings, f"{name}_CLIENT_ID", CLIENT_ID)
            setattr(settings, f"{name}_CLIENT_SECRET", CLIENT_SECRET)
            setattr(settings, f"{name}_AUTHORIZE_URL", f"{self.base}/{name.lower()}/authorize")
            setattr(settings, f"{name}_TOKEN_URL", f"{self.base}/{name.lower()}/token")
        settings.GITHUB_EMAILS_URL = f"{self.base}/github/user/emails"
        settings.GOOGLE_USERINFO_URL = f"{self.base}/google/userinfo"

    def answer(self, method: str, path: str, params: dict, headers) -> tuple[int, dict | None, str | None]:
        """The status, the JSON body and, for a redirect, its location."""
        self.requests.append((method, path, params))
        if self.failing:
            return 503, {"error": "temporarily_unavailable"}, None
        if path.endswith("/authorize"):
            return self._authorize(params)
        if path.endswith("/token"):
            return self._token(params, headers)
        if headers.get("Authorization", "").removeprefix("Bearer ") not in self.tokens:
            return 401, {"message": "Bad credentials"}, None
        if path == "/github/user/emails":
            return 200, self.emails, None
        if path == "/google/userinfo":
            primary = next(entry for entry in self.emails if entry["primary"])
            return 200, {"sub": "1", "email": primary["email"], "email_verified": primary["verified"]}, None
        return 404, {"error": "not_found"}, None

    def _authorize(self, params: dict) -> tuple[int, None, str]:
        target = params["redirect_uri"]
        if self.denies:
            query = {"error": "access_denied", "state": params["state"]}
        else:
            code = secrets.token_urlsafe(16)
            self.codes[code] = params
            query = {"code": code, "state": params["state"]}
        return 302, None, f"{target}?{urlencode(query)}"

    def _token(self, params: dict, headers) -> tuple[int, dict, None]:
        # The client authenticates with HTTP Basic (client_secret_basic), Authlib's default.
        basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if headers.get("Authorization") != f"Basic {basic}":
            return 401, {"error": "invalid_client"}, None
        issued = self.codes.pop(params.get("code", ""), None)
        if issued is None or issued["redirect_uri"] != params.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}, None
        digest = hashlib.sha256(params.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != issued["code_challenge"]:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}, None
        token = secrets.token_urlsafe(16)
        self.tokens.add(token)
        return 200, {"access_token": token, "token_type": "bearer", "scope": issued["scope"]}, None


def start() -> tuple[FakeProvider, ThreadingHTTPServer]:
    def answer(method, path, params, headers):
        status, payload, location = provider.answer(method, path, params, headers)
        return status, payload, {"Location": location} if location else {}

    server = json_server(answer)
    provider = FakeProvider(base=f"http://127.0.0.1:{server.server_address[1]}")
    return provider, server
