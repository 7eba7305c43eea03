import functools
import ipaddress
import re

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@functools.lru_cache(maxsize=4096)
def normalize_domain(value: str) -> str | None:
    """Lower-case, IDNA-encoded domain name with at least two labels, or None when it cannot be one.

    Remembered per process: every send names its sender's domain, and the IDNA codec and the IP address check
    (two exceptions for a name) cost 40 µs each time for the same few names."""
    name = (value or "").strip().rstrip(".").lower()
    if not name or " " in name:
        return None
    try:
        ipaddress.ip_address(name.strip("[]"))
        return None
    except ValueError:
        pass
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = name.split(".")
    if len(name) > 253 or len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        return None
    if labels[-1].isdigit():
        return None
    return name
