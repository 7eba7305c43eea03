"""What each process remembers of which sender hosts its projects may send from, so that accepting a send does
not ask the database every time.

Only positive answers are kept, for `DOMAINS_SENDER_MEMORY_SECONDS`: a domain verified a moment ago is found at
once (a miss asks the database), and saving or deleting a domain forgets its project's answers in this process at
once. Another process may go on accepting mail from a domain that was just removed or unverified for up to that
many seconds. Delivery looks the domain up again before it signs (`sender_domain_for(for_signing=True)`), so such
mail fails with the domain named; nothing is ever sent from a domain that is not verified.
"""

import time

from django.conf import settings

# (project id, sender host) -> (monotonic expiry, the verified domain). Reads and writes of one dict entry are
# atomic under the GIL; the worst race re-asks the database. Emptied when it grows past _MAX_ENTRIES (expired
# entries are otherwise only replaced, never swept).
_memory: dict = {}
_MAX_ENTRIES = 10_000


def recall(project_id, host: str):
    """The verified domain remembered for `host` of the project, or None."""
    entry = _memory.get((project_id, host))
    if entry is None or entry[0] < time.monotonic():
        return None
    return entry[1]


def remember(project_id, host: str, domain) -> None:
    seconds = settings.DOMAINS_SENDER_MEMORY_SECONDS
    if seconds <= 0:
        return
    if len(_memory) >= _MAX_ENTRIES:
        _memory.clear()
    _memory[(project_id, host)] = (time.monotonic() + seconds, domain)


def forget_project(project_id) -> None:
    # list() copies the keys in one step: iterating the dict itself could meet another thread's insert.
    for key in [key for key in list(_memory) if key[0] == project_id]:
        _memory.pop(key, None)


def forget_all() -> None:
    _memory.clear()
