"""Django from the listeners' event loop: the ORM is synchronous, so each step of a session runs in a worker thread."""

import asyncio
import functools
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
    """Run `fn(*args, **kwargs)` in a worker thread (not the loop's: a slow query never stalls other sessions).

    The step runs in the thread's own context, not a copy of the loop's (as `asyncio.to_thread` would): Django keeps
    its cache clients in context-local storage, so in a fresh copy every step built a new cache and opened a new Redis
    connection (a connect, a health check and a CLIENT SETINFO per message). In the thread's context each worker
    thread keeps one, as it keeps its database connection."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(_with_fresh_connections, fn, *args, **kwargs))
