"""DKIM keys of sender domains: generation, encryption at rest, the published record, and signing (dkimpy, through
`dkim_adapter`).

The private key is stored encrypted (`core.crypto`, under a key derived for this purpose only).
"""

import base64
import secrets
import string

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings

from core import crypto
from domains import dkim_adapter, dns

KEY_SIZE = 2048


_PURPOSE = b"herald/domains/dkim-private-key/v1"
# Headers signed by default: those a recipient sees and that a replay attacker would want to change.
SIGNED_HEADERS = (
    b"from",
    b"to",
    b"cc",
    b"subject",
    b"date",
    b"message-id",
    b"reply-to",
    b"mime-version",
    b"content-type",
    b"list-unsubscribe",
    b"list-unsubscribe-post",
)


def new_selector() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return f"{settings.DOMAINS_DKIM_SELECTOR_PREFIX}-" + "".join(secrets.choice(alphabet) for _ in range(6))


def generate_key_pair() -> tuple[str, str]:
    """A new RSA key: (public key as the record's base64 `p=`, encrypted private key PEM)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_SIZE)
    public_der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    private_pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return base64.b64encode(public_der).decode("ascii"), crypto.encrypt(_PURPOSE, private_pem)


def decrypt_private_key(token: str) -> bytes:
    # Cached by core.crypto: a domain signs thousands of messages with one key, and dkimpy's parsed form of it is
    # kept in memory already (dkim_adapter).
    return crypto.decrypt(_PURPOSE, token)


def record_value(public_key: str) -> str:
    return f"v=DKIM1; k=rsa; p={public_key}"


def record_name(*, selector: str, domain_name: str) -> str:
    return f"{selector}._domainkey.{domain_name}"


def record_public_key(value: str) -> str | None:
    """The `p=` of a DKIM record (whitespace removed), or None when the text is not a DKIM key record."""
    tags = {}
    for part in value.split(";"):
        key, sep, tag_value = part.partition("=")
        if sep:
            tags[key.strip().lower()] = "".join(tag_value.split())
    if tags.get("v", "DKIM1") != "DKIM1" or tags.get("k", "rsa").lower() != "rsa":
        return None
    return tags.get("p")


def sign(*, message: bytes, selector: str, domain_name: str, private_key_encrypted: str) -> bytes:
    """The `DKIM-Signature: ...` header (bytes, CRLF-terminated) for `message`, signed relaxed/simple.

    Simple body canonicalisation (as Amazon SES and dkimpy's default): our bodies are quoted-printable with no
    trailing whitespace for a relay to alter, and relaxed body canonicalisation rewrites every run of spaces of the
    body, which cost more than the RSA signature itself."""
    return dkim_adapter.sign(
        message,
        selector=selector.encode("ascii"),
        domain=domain_name.encode("ascii"),
        private_key=decrypt_private_key(private_key_encrypted),
        headers=SIGNED_HEADERS,
        canonicalize=(b"relaxed", b"simple"),
    )


def txt_lookup(name: bytes, timeout: int = 5) -> bytes | None:
    """A dkimpy `dnsfunc` answering through our resolver, so verification honours DNS_NAMESERVERS."""
    result = dns.resolve(name.decode("ascii"), "TXT", use_cache=False)
    return result.records[0].encode() if result.found else None
