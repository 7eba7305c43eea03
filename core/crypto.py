"""Secrets kept at rest: Fernet under a key derived by HKDF for one purpose from `FIELD_ENCRYPTION_KEY` when it is
set, else from `SECRET_KEY`.

Each purpose (DKIM private keys, webhook signing secrets) gets its own derived key, so a value encrypted for one can
never be decrypted as the other. Values encrypted under a former secret still decrypt while it is listed in
`FIELD_ENCRYPTION_KEY_FALLBACKS` or `SECRET_KEY_FALLBACKS`.
"""

import base64
from functools import lru_cache

from cryptography.fernet import Fernet, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


def _fernet_for(purpose: bytes, secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


@lru_cache(maxsize=8)
def _fernet(purpose: bytes, secret: str, fallbacks: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([_fernet_for(purpose, secret), *(_fernet_for(purpose, old) for old in fallbacks)])


def current_secrets() -> tuple[str, tuple[str, ...]]:
    """The secret that encrypts new values, then every secret that may have encrypted an older one: a dedicated
    FIELD_ENCRYPTION_KEY (and its fallbacks) when set, so that rotating SECRET_KEY never touches stored secrets, then
    SECRET_KEY and its fallbacks (values stored before FIELD_ENCRYPTION_KEY was set)."""
    django_secrets = (settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS)
    if settings.FIELD_ENCRYPTION_KEY:
        return settings.FIELD_ENCRYPTION_KEY, (*settings.FIELD_ENCRYPTION_KEY_FALLBACKS, *django_secrets)
    return django_secrets[0], django_secrets[1:]


def encrypt(purpose: bytes, plaintext: bytes) -> str:
    return _fernet(purpose, *current_secrets()).encrypt(plaintext).decode("ascii")


def decrypt(purpose: bytes, token: str) -> bytes:
    return _decrypt(purpose, token, *current_secrets())


@lru_cache(maxsize=256)
def _decrypt(purpose: bytes, token: str, secret: str, fallbacks: tuple[str, ...]) -> bytes:
    # Fernet checks an HMAC and decrypts on every call; the same few secrets are read for thousands of messages.
    return _fernet(purpose, secret, fallbacks).decrypt(token.encode("ascii"))
