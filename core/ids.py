import uuid


def uuid_or_none(value) -> uuid.UUID | None:
    """`value` as a UUID, or None when it is not one: ids come from paths and bodies, and a malformed id names no
    row (a 404 or a field error, never a database error)."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
