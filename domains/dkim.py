"""DKIM keys of sender domains: generation, encryption at rest, the published record, and signing.

The private key is stored encrypted (`core.crypto`, under a key derived for this purpose only).
"""

import base64
import hashlib
import re
import secrets
import string
import time
from functools import lru_cache

import dkim as dkimpy
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from django.conf import settings

from core import crypto
from domains import dns

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
    return crypto.decrypt(_PURPOSE, token)


@lru_cache(maxsize=256)
def _signing_key(token: str, secrets: tuple) -> rsa.RSAPrivateKey:
    # A domain signs thousands of messages with one key: it is decrypted (an HMAC check and AES) and parsed (with
    # OpenSSL's consistency check of the key, several milliseconds) once per process, not per message. Keyed by the
    # secrets too, so that a key that no longer decrypts under the current ones is not served from here.
    return serialization.load_pem_private_key(decrypt_private_key(token), password=None)


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


_WSP_RUNS = re.compile(rb"[ \t]+")
_B64_LINE = 72


def _relaxed(name: bytes, value: bytes) -> bytes:
    """A header as relaxed canonicalisation writes it (RFC 6376 3.4.2): the name in lower case, the value unfolded,
    runs of blanks made one space, blanks around it removed."""
    value = _WSP_RUNS.sub(b" ", value.replace(b"\r\n", b"")).strip(b" ")
    return name.strip(b" \t").lower() + b":" + value


def _headers(head: bytes) -> dict[bytes, bytes]:
    """The last instance of each header of `head` (names in lower case), the one a signature covers when its name
    is listed once (RFC 6376 5.4.2), as (name as written + value with its folds)."""
    headers: dict[bytes, bytes] = {}
    name = None
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and name is not None:
            headers[name] += b"\r\n" + line
            continue
        field, colon, _value = line.partition(b":")
        if not colon:
            raise ValueError(f"Not a header line: {line[:100]!r}")
        name = field.strip(b" \t").lower()
        headers[name] = line
    return headers


def _folded_list(names: list[bytes]) -> str:
    """The `h=` list, folded after a colon before a line passes 72 characters (whitespace around the colons is
    allowed and ignored)."""
    lines, line = [], ""
    for name in (name.decode("ascii") for name in names):
        if line and len(line) + len(name) > 68:
            lines.append(line)
            line = ""
        line += name + ":"
    return "\r\n   ".join([*lines, line]).rstrip(":")


def sign(*, message: bytes, selector: str, domain_name: str, private_key_encrypted: str, now=None) -> bytes:
    """The `DKIM-Signature: ...` header (bytes, CRLF-terminated) for `message`, rsa-sha256, relaxed/simple, over
    those of SIGNED_HEADERS the message has (From at least).

    Written here rather than by dkimpy, whose `DKIM.sign` computed the RSA step with Python integers, parsed the
    PEM key on every call and canonicalised every header of the message: 2-3 times the cost of the one step that
    must be paid per message, the RSA-2048 signature itself (0.3 ms through OpenSSL). dkimpy verifies what this
    writes in the tests. Simple body canonicalisation (as Amazon SES and dkimpy's default): our bodies are
    quoted-printable with no trailing whitespace for a relay to alter, and relaxed body canonicalisation rewrites
    every run of spaces of the body. A message that is not CRLF throughout (never one of ours) is signed by
    dkimpy, which normalises it first."""
    key = _signing_key(private_key_encrypted, crypto.current_secrets())
    head, separator, body = message.partition(b"\r\n\r\n")
    if not separator or message.count(b"\n") != message.count(b"\r\n"):
        return _dkimpy_sign(message, selector, domain_name, key)
    headers = _headers(head)
    names = [name for name in SIGNED_HEADERS if name in headers] or [b"from"]
    # Simple body canonicalisation: the empty lines at the end dropped, one CRLF ending it.
    body_hash = base64.b64encode(hashlib.sha256(body.rstrip(b"\r\n") + b"\r\n").digest())
    stamp = int(now if now is not None else time.time())
    unsigned = (
        (
            f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/simple;\r\n d={domain_name}; s={selector}; t={stamp};\r\n"
            f" h={_folded_list(names)};\r\n"
        ).encode("ascii")
        + b" bh="
        + body_hash
        + b";\r\n b="
    )
    signed = b"".join(
        _relaxed(*headers[name].split(b":", 1)) + b"\r\n" for name in names if name in headers
    ) + _relaxed(*unsigned.split(b":", 1))
    signature = base64.b64encode(key.sign(signed, padding.PKCS1v15(), hashes.SHA256()))
    lines = [signature[start : start + _B64_LINE] for start in range(0, len(signature), _B64_LINE)]
    return unsigned + b"\r\n ".join(lines) + b"\r\n"


def _dkimpy_sign(message: bytes, selector: str, domain_name: str, key: rsa.RSAPrivateKey) -> bytes:
    present = {name.lower() for name, _value in dkimpy.rfc822_parse(message)[0]}
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return dkimpy.sign(
        message,
        selector.encode("ascii"),
        domain_name.encode("ascii"),
        pem,
        canonicalize=(b"relaxed", b"simple"),
        include_headers=[name for name in SIGNED_HEADERS if name in present] or [b"from"],
        linesep=b"\r\n",
    )


def txt_lookup(name: bytes, timeout: int = 5) -> bytes | None:
    """A dkimpy `dnsfunc` answering through our resolver, so verification honours DNS_NAMESERVERS."""
    result = dns.resolve(name.decode("ascii"), "TXT", use_cache=False)
    return result.records[0].encode() if result.found else None
