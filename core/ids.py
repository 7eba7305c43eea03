import os
import uuid
from datetime import UTC, datetime


def uuid_or_none(value) -> uuid.UUID | None:
    """`value` as a UUID, or None when it is not one: ids come from paths and bodies, and a malformed id names no
    row (a 404 or a field error, never a database error)."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def uuid7s(count: int, *, moment: datetime) -> list[str]:
    """`count` new time-ordered (version 7) UUIDs of `moment` in their text form, for rows inserted by the thousand:
    the 48 bits of milliseconds first, as `uuid6.uuid7` makes them, then random bits, from one read of the system's
    random source for all of them, and no UUID object built and formatted per id (`uuid.uuid4()` and `str()` were a
    fifth of a campaign batch's cost). Ids of one `moment` share its prefix; 74 random bits keep them apart."""
    stamp = (int(moment.timestamp() * 1000) & (1 << 48) - 1).to_bytes(6, "big")
    data = bytearray(os.urandom(16 * count))
    for at in range(0, 16 * count, 16):
        data[at : at + 6] = stamp
    data[6::16] = bytes(byte & 0x0F | 0x70 for byte in data[6::16])  # version 7
    data[8::16] = bytes(byte & 0x3F | 0x80 for byte in data[8::16])  # RFC 9562 variant
    text = data.hex()
    return [
        f"{text[at : at + 8]}-{text[at + 8 : at + 12]}-{text[at + 12 : at + 16]}-{text[at + 16 : at + 20]}-"
        f"{text[at + 20 : at + 32]}"
        for at in range(0, 32 * count, 32)
    ]


def uuid7_of(moment: datetime) -> uuid.UUID:
    """One new version 7 UUID of `moment` (`uuid6.uuid7` takes the clock's time only)."""
    return uuid.UUID(uuid7s(1, moment=moment)[0])


def uuid7_time(value) -> datetime | None:
    """The moment (UTC, to the millisecond) a version 7 UUID was made at; None for any other UUID."""
    value = value if isinstance(value, uuid.UUID) else uuid_or_none(value)
    if value is None or value.version != 7:
        return None
    return datetime.fromtimestamp((value.int >> 80) / 1000, tz=UTC)
