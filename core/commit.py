"""Work that follows a committed write: `after_commit`, the one way the apps register an after-commit hook."""

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)


def after_commit(callback: Callable[[], object], *, what: str) -> None:
    """Run `callback` once the current transaction commits (at once without one, in autocommit), as
    `transaction.on_commit` does, except that its exception is logged, saying `what` it failed to do, and goes no
    further.

    A hook runs after its write is committed: raising would not undo the write, only answer the request that made it
    with an error (a client then sends it again, and it is written twice), or stop the hooks after it. What a hook
    does (hand work to the broker, mark a cache entry, notify receivers) is done again by a periodic task or expires
    on its own, so a lost hook only delays it; each caller says which in its `what`."""

    def run() -> None:
        try:
            callback()
        except Exception:
            logger.exception("After commit, could not %s", what)

    transaction.on_commit(run)  # noqa: TID251 - the one registration
