"""A probe entry of the beat schedule: it runs every second into a queue of its own, which no worker reads, and its
messages, taken off that queue, say when each run was published (each expires EXPIRES seconds after it was). Two
beats publishing one run would publish it within milliseconds; runs are a second apart."""

from datetime import datetime, timedelta
from itertools import pairwise

from kombu import Exchange, Queue

from config.celery import app

PROBE, QUEUE, EXPIRES = "beat-probe", "beat-probe", 60
# The entry as a beat schedule (CELERY_BEAT_SCHEDULE) holds it; the task is never run.
PROBE_ENTRY = {
    "task": "config.tests.beat_probe",
    "schedule": timedelta(seconds=1),
    "options": {"queue": QUEUE, "expire_seconds": EXPIRES},
}


def probe_queue_declare(broker: str | None = None) -> None:
    """The probe's queue, declared before the first message, and emptied."""
    with app.connection_for_write(broker) as connection:
        Queue(QUEUE, Exchange(QUEUE), routing_key=QUEUE)(connection.default_channel).declare()
    drain(broker)


def drain(broker: str | None = None) -> list[dict]:
    """The headers of the probe messages waiting in their queue, taken off it."""
    taken = []
    with app.connection_for_write(broker) as connection:
        channel = connection.default_channel
        while (message := channel.basic_get(QUEUE, no_ack=True)) is not None:
            taken.append(message.headers)
    return taken


def published(headers: list[dict]) -> list[datetime]:
    """When each probe message was published, in order."""
    assert all(header["periodic_task_name"] == PROBE for header in headers)
    return sorted(datetime.fromisoformat(header["expires"]) - timedelta(seconds=EXPIRES) for header in headers)


def closest(times: list[datetime]) -> float:
    """The shortest time (s) between two publications: well under a second when one run was published twice."""
    return min([(later - earlier).total_seconds() for earlier, later in pairwise(times)], default=float("inf"))
