import hmac
from dataclasses import dataclass

from accounts.keys import KeyKind, hash_key, kind_of
from accounts.models import IdempotencyRecord, Project

_PROJECT_AUTH_FIELDS = ("id", "name", "disabled", "disabled_reason", "public_key", "secret_key_hash")


@dataclass(frozen=True)
class ApiKeyMatch:
    project: Project
    kind: KeyKind


def api_key_lookup(*, token: str) -> ApiKeyMatch | None:
    """Find the project a key belongs to with one indexed query; None for an unknown or malformed key."""
    kind = kind_of(token)
    if kind is None:
        return None
    if kind is KeyKind.PUBLIC:
        project = Project.objects.only(*_PROJECT_AUTH_FIELDS).filter(public_key=token).first()
        if project is None or not hmac.compare_digest(project.public_key, token):
            return None
    else:
        digest = hash_key(token)
        project = Project.objects.only(*_PROJECT_AUTH_FIELDS).filter(secret_key_hash=digest).first()
        if project is None or not hmac.compare_digest(project.secret_key_hash, digest):
            return None
    return ApiKeyMatch(project=project, kind=kind)


def idempotency_record_get(*, project: Project, key: str) -> IdempotencyRecord | None:
    return IdempotencyRecord.objects.filter(project=project, key=key).first()
