"""Kombu's filesystem transport (the embedded install's broker, web, workers and beat exchanging files under
`var/`), with a short wait per poll.

Celery's worker loop for transports without an event loop asks the transport for messages two seconds at a time and
checks for a stop only between those calls (`celery.worker.loops.synloop`): a worker stopped with Ctrl-C sat out the
rest of its two seconds first. Here no call waits longer than `MAX_WAIT_SECONDS`, so a stop is seen within a poll;
callers that wait longer simply call again, as Celery's loop does on a timeout.

Kombu picks a transport by the broker URL's scheme: `register()` makes `filesystem://` URLs take this one, wherever a
connection is made (workers, beat, the web processes' publishing, doctor), and leaves every other URL alone."""

from kombu.transport import TRANSPORT_ALIASES, filesystem

MAX_WAIT_SECONDS = 0.2


class Transport(filesystem.Transport):
    def drain_events(self, connection, timeout=None):
        if timeout is not None:
            timeout = min(timeout, MAX_WAIT_SECONDS)
        return super().drain_events(connection, timeout=timeout)


def register() -> None:
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
