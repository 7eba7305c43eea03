from datetime import UTC, datetime


def iso(value: datetime | None) -> str | None:
    """UTC ISO 8601 with milliseconds and Z, the one timestamp format of the API."""
    if value is None:
        return None
    # isoformat is C all the way (strftime parses its format each time): "...T13:25:25.926+00:00" -> "...926Z".
    return value.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def iso_now() -> str:
    return iso(datetime.now(UTC))
