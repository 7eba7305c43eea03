"""The contact data rules (docs/contacts.md, "Data rules"), implemented once.

Every writer of contact data (`POST /contacts`, `PATCH /contacts/:id`, `/v1/track`, `/v1/send`, CSV import and
workflows' UPDATE_CONTACT steps) passes the request's `data` object through `data_rules` and applies the result
with `DataChanges.apply`.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from core.errors import ValidationFailed

RESERVED_KEYS = frozenset({"id", "svc_id", "svc_email", "email", "unsubscribeUrl", "subscribeUrl", "manageUrl"})
MAX_DATA_BYTES = 64 * 1024
# What a contact may hold in all, however many requests built it up: each template render and segment scan reads it.
MAX_CONTACT_DATA_BYTES = 256 * 1024
MAX_KEY_LENGTH = 255


def data_size(data: dict) -> int:
    """Bytes of `data` serialised compactly as UTF-8 JSON: the measure of both caps."""
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass
class DataChanges:
    """What a request does to a contact's data, and the variables it makes available for that request only."""

    store: dict[str, Any] = field(default_factory=dict)
    remove: set[str] = field(default_factory=set)
    # Every value the request supplied, persistent or not (unwrapped): template variables and event data.
    variables: dict[str, Any] = field(default_factory=dict)

    def apply(self, existing: dict | None) -> dict:
        """The contact's data after this request (a new dict; `existing` is not modified): the removed keys dropped,
        then the stored ones set, at the top level only (a stored object replaces the old value whole). The one
        statement of the merge: every path, on every database, merges here (`contacts.upsert`).

        422 at `data` when the result would pass `MAX_CONTACT_DATA_BYTES` (only a merge into data already held can:
        one request's data is at most `MAX_DATA_BYTES`)."""
        merged = {key: value for key, value in (existing or {}).items() if key not in self.remove}
        merged.update(self.store)
        if self.store and existing and (size := data_size(merged)) > MAX_CONTACT_DATA_BYTES:
            raise ValidationFailed.field(
                "data",
                f"A contact's data must be at most {MAX_CONTACT_DATA_BYTES // 1024} KB in all; "
                f"with this change it would be {size} bytes",
                "too_big",
            )
        return merged

    @property
    def empty(self) -> bool:
        return not self.store and not self.remove


def _is_transient(value: Any) -> bool:
    return isinstance(value, dict) and "value" in value and value.get("persistent") is False


def validate_data(data: Any, *, field_name: str = "data") -> dict:
    """Shape checks shared by every endpoint: an object, at most 64 KB serialised, keys 1-255 characters,
    `locale` a string. Raises 422 VALIDATION_ERROR with the field path."""
    if not isinstance(data, dict):
        from core.json import json_type

        raise ValidationFailed.field(field_name, "Expected object", "invalid_type", received=json_type(data))
    try:
        size = data_size(data)
    except (TypeError, ValueError):
        raise ValidationFailed.field(field_name, "Data must be JSON", "invalid_type") from None
    if size > MAX_DATA_BYTES:
        raise ValidationFailed.field(field_name, f"Data must be at most {MAX_DATA_BYTES} bytes", "too_big")
    for key, value in data.items():
        if not 1 <= len(key) <= MAX_KEY_LENGTH:
            raise ValidationFailed.field(
                field_name, f"Data keys must be 1 to {MAX_KEY_LENGTH} characters", "too_big" if key else "too_small"
            )
        if key == "locale":
            inner = value["value"] if _is_transient(value) else value
            if inner is not None and not isinstance(inner, str):
                raise ValidationFailed.field(f"{field_name}.locale", "Expected string", "invalid_type")
    return data


def data_rules(data: dict | None) -> DataChanges:
    """Sort a request's `data` into what to store, what to delete and the request's variables.

    1. Reserved keys (`id`, `email`, the three page URLs and the `svc_` variants) are dropped silently.
    2. `null` deletes the key; `""` is ignored (neither stored nor a variable).
    3. `{value, persistent: false}` is a variable of this request only, never stored; `{value, persistent:
       true}` stores `value`.
    4. Anything else (primitives, plain objects, arrays) is stored as given.
    """
    changes = DataChanges()
    for key, value in (data or {}).items():
        if key in RESERVED_KEYS:
            continue
        if value is None:
            changes.remove.add(key)
            continue
        if value == "":
            continue
        if _is_transient(value):
            changes.variables[key] = value["value"]
            continue
        if isinstance(value, dict) and value.get("persistent") is True and "value" in value:
            value = value["value"]
            if value is None:
                changes.remove.add(key)
                continue
        changes.store[key] = value
        changes.variables[key] = value
    return changes
