"""Django from the listeners' event loop: the ORM is synchronous, so each step of a session runs in a worker thread."""

import asyncio
from collections.abc import Callable
from typing import TypeVar

from django.db import close_old_connections

T = TypeVar("T")


def _with_fresh_connections(fn: Callable[..., T], *args, **kwargs) -> T:
    # The threads of the pool live as long as the server: a connection the database closed meanwhile, or one past
    # DATABASE_CONN_MAX_AGE, is replaced before the step and not left broken after it (as Django does per request).
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


async def in_django(fn: Callable[..., T], *args, **kwargs) -> T:
    """Run `fn(*args, **kwargs)` in a worker thread (not the loop's: a slow query never stalls other sessions)."""
    return await asyncio.to_thread(_with_fresh_connections, fn, *args, **kwargs)
