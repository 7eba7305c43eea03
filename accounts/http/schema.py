"""OpenAPI: the schemes of the two keys and of the dashboard's session (`accounts.http.authentication`)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class _BearerKeyScheme(OpenApiAuthenticationExtension):
    priority = 1

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": self.description}


class SecretKeyScheme(_BearerKeyScheme):
    target_class = "accounts.http.authentication.SecretKeyAuthentication"
    name = "secretKey"
    description = "The project's secret key, `sk_…`. Required by every endpoint except POST /v1/track."


class PublicKeyScheme(_BearerKeyScheme):
    target_class = "accounts.http.authentication.PublicKeyAuthentication"
    name = "publicKey"
    description = "The project's public key, `pk_…`. Accepted only by POST /v1/track."


class _SessionScheme(OpenApiAuthenticationExtension):
    priority = 1
    name = "session"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": (
                "The browser session set by POST /auth/login. Unsafe methods also need the csrftoken cookie's value "
                "in X-CSRFToken; project endpoints need the project in X-Project-Id."
            ),
        }


class SessionScheme(_SessionScheme):
    target_class = "accounts.http.authentication.SessionAuthentication"


class UserSessionScheme(_SessionScheme):
    # The same cookie; a scheme of its own since OpenAPI names one per class.
    target_class = "accounts.http.authentication.UserSessionAuthentication"
    name = "userSession"
