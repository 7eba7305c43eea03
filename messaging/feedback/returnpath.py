"""The return path of a sent message: `bounce+<token>@<DOMAINS_RETURN_PATH_SUBDOMAIN>.<domain>`, whose token names the
email, so that a delivery or abuse report sent back to it finds the email without a provider (docs/smtp.md,
"Bounces and complaints without a provider").

The token is the email id in base32 (26 characters) followed by the first 10 bytes of an HMAC-SHA256 of it keyed
with SECRET_KEY (16 more): 49 characters with `bounce+`, under the 64 a local part may have. Lower case, since
some mail systems change the case of an address; read back in any case. Only the service can make a token that
reads: a forged or altered one names no email.
"""

import base64
import hmac
import uuid

from django.conf import settings
from django.utils.crypto import salted_hmac

PREFIX = "bounce+"
_SALT = "herald.feedback.returnpath"
_ID_CHARS = 26  # 16 bytes in base32 without its padding
_MAC_BYTES = 10


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _mac(email_id: uuid.UUID, secret: str) -> bytes:
    return salted_hmac(_SALT, email_id.bytes, secret=secret, algorithm="sha256").digest()[:_MAC_BYTES]


def token_make(email_id: uuid.UUID) -> str:
    return _b32(email_id.bytes) + _b32(_mac(email_id, settings.SECRET_KEY))


def token_read(token: str) -> uuid.UUID | None:
    """The email id a token names, or None for a token the service did not make (under SECRET_KEY or one of its
    fallbacks, so that reports for mail sent before a key rotation still count)."""
    token = token.strip().upper()
    if len(token) != _ID_CHARS + len(_b32(b"x" * _MAC_BYTES)):
        return None
    try:
        email_id = uuid.UUID(bytes=base64.b32decode(token[:_ID_CHARS] + "======"))
        mac = base64.b32decode(token[_ID_CHARS:])
    except ValueError:
        return None
    for secret in (settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS):
        if hmac.compare_digest(mac, _mac(email_id, secret)):
            return email_id
    return None


def bounce_host(domain_name: str) -> str:
    return f"{settings.DOMAINS_RETURN_PATH_SUBDOMAIN}.{domain_name}"


def bounce_address(*, email_id: uuid.UUID, domain_name: str) -> str | None:
    """The envelope sender of an email sent as `domain_name`, or None when no return-path host is configured (the
    sender's own address is the envelope sender then)."""
    if not settings.DOMAINS_RETURN_PATH_HOST:
        return None
    return f"{PREFIX}{token_make(email_id)}@{bounce_host(domain_name)}"


def bounce_token(address: str) -> str | None:
    """The token of a bounce address's local part (`bounce+<token>`), or None when it is not one."""
    local, at, _ = address.rpartition("@")
    if not at or not local.lower().startswith(PREFIX):
        return None
    return local[len(PREFIX) :]
