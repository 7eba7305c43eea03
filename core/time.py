from datetime import UTC, datetime


def iso(value: datetime | None) -> str | None:
    """UTC ISO 8601 with milliseconds and Z, the one timestamp format of the API."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def iso_now() -> str:
    return iso(datetime.now(UTC))
