"""What the apps' tasks share: publishing many messages of one task at once, and telling a task's soft time limit
from the errors it brings along."""

import logging
from contextlib import contextmanager

from celery.exceptions import SoftTimeLimitExceeded

logger = logging.getLogger(__name__)


def time_limit_reached(error: BaseException) -> bool:
    """Whether `error` is the task's soft time limit (Celery raises SoftTimeLimitExceeded wherever the task stands),
    or an error raised while unwinding from it: struck during a COMMIT, the limit leaves the statement in flight,
    and leaving the atomic block then fails on the connection with a database error of its own."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, SoftTimeLimitExceeded):
            return True
        seen.add(id(error))
        error = error.__context__
    return False


def publish_in_batches(task, ids: list, *, size: int, what: str, **options) -> None:
    """Publish `task` once per `size` ids of `ids` (its one argument), with the same `options`, over one producer
    whose messages go to the broker together (one Redis round trip for the lot, not one each): a campaign's batch
    of 1,000 emails is 20 messages, and publishing them one by one cost its fan-out twice the CPU. A broker
    failure is logged with `what` (what the caller's sweeper does about it): the messages not yet flushed are
    lost, and the sweeper is what publishes rows whose message never came."""
    batches = [ids[start : start + size] for start in range(0, len(ids), size)]
    if task.app.conf.task_always_eager:  # run here, one batch at a time; no broker involved
        for batch in batches:
            with _failure_logged(task, len(batch), what):
                task.apply_async(args=[batch], **options)
        return
    # Celery would build a repr of every argument for its logs; a list of ids says nothing worth that.
    options["argsrepr"] = f"[<{size} ids at most>]"
    with _failure_logged(task, len(ids), what), task.app.producer_or_acquire() as producer, producer.batch():
        for batch in batches:
            task.apply_async(args=[batch], producer=producer, **options)


@contextmanager
def _failure_logged(task, count: int, what: str):
    try:
        yield
    except Exception:
        logger.exception("Could not publish %s for %d id(s); %s", task.name, count, what)
