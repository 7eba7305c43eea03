"""API key material: generation, hashing and the shape check done before any database lookup."""

import hashlib
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum


class KeyKind(StrEnum):
    PUBLIC = "public"
    SECRET = "secret"


PREFIXES = {KeyKind.PUBLIC: "pk_", KeyKind.SECRET: "sk_"}
_KEY_SHAPE = re.compile(r"^(pk|sk)_[0-9a-f]{64}$")


@dataclass(frozen=True)
class KeyPair:
    public_key: str
    secret_key: str


def generate_key(kind: KeyKind) -> str:
    return PREFIXES[kind] + secrets.token_hex(32)


def generate_pair() -> KeyPair:
    return KeyPair(public_key=generate_key(KeyKind.PUBLIC), secret_key=generate_key(KeyKind.SECRET))


def hash_key(key: str) -> str:
    # A plain digest is enough for 256 random bits (no dictionary to attack), and it keeps lookup O(1).
    return hashlib.sha256(key.encode()).hexdigest()


def kind_of(token: str) -> KeyKind | None:
    """The kind a well-formed key claims to be, or None for anything that cannot be one of our keys."""
    match = _KEY_SHAPE.match(token)
    if not match:
        return None
    return KeyKind.PUBLIC if match.group(1) == "pk" else KeyKind.SECRET
