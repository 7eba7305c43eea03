"""A flood of slow work does not delay transactional mail: with the workers started as the one-host default starts
them (deploy/systemd), webhook steps to a receiver that accepts and never answers hold every slot of the worker of
the other queues, and mail sent through /v1/send meanwhile reaches a real SMTP server as fast as without them."""

import selectors
import shutil
import socket
import statistics
import threading
import time
from contextlib import ExitStack

import httpx
import pytest

from config.tests.processes import (
    gunicorn_server,
    redis_server,
    served_env,
    unit_workers,
    wait_until,
    worker_process,
)
from messaging.sending.tests.smtp import start_sink
from workflows import services
from workflows.models import StepType

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server program"),
]
SENDS = 5
# Noise of a loaded machine on top of the ratio; a delivery waiting behind one webhook call would wait seconds.
SLACK_SECONDS = 0.5


class HangingReceiver:
    """An HTTP receiver on loopback that accepts every connection, reads what comes and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.open: set[socket.socket] = set()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            for key, _ in self._selector.select(timeout=0.05):
                if key.fileobj is self.listener:
                    connection, _ = self.listener.accept()
                    self._selector.register(connection, selectors.EVENT_READ)
                    self.open.add(connection)
                elif not key.fileobj.recv(65536):  # the caller gave up
                    self._selector.unregister(key.fileobj)
                    self.open.discard(key.fileobj)
                    key.fileobj.close()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._thread.join()
        for connection in [*self.open, self.listener]:
            connection.close()


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def _latency(client: httpx.Client, sink, name: str) -> float:
    """Seconds from a /v1/send call to its message's arrival at the SMTP server."""
    recipient = f"{name}@example.test"
    start = time.monotonic()
    answer = client.post("/v1/send", json={"to": recipient, "from": "hi@alice.test", "subject": name, "body": "Hi"})
    assert answer.status_code == 200, answer.text
    arrived = wait_until(
        lambda: next((message.at for message in list(sink.received) if message.rcpt_tos == [recipient]), None),
        timeout=30,
        what=f"{recipient} at the SMTP server",
        interval=0.005,
    )
    return arrived - start


def test_a_flood_of_hanging_webhook_steps_does_not_delay_transactional_mail(project):
    workers = unit_workers()
    [delivery] = [command for command in workers if _option(command, "-Q") == "delivery"]
    [others] = [command for command in workers if command is not delivery]
    slots = int(_option(others, "--concurrency"))
    receiver = HangingReceiver()
    workflow = services.workflow_create(project=project.project, name="Flood", event_name="flood")
    services.step_add(workflow=workflow, step_type=StepType.WEBHOOK, config={"url": receiver.url})
    services.workflow_update(workflow=workflow, enabled=True)
    sink, controller = start_sink()
    try:
        with redis_server() as redis, ExitStack() as processes:
            env = {
                **served_env(redis, sink),
                # An engine task per execution: the flood is many tasks, as many tenants' workflows would be.
                "WORKFLOW_TASK_BATCH": "1",
            }
            for command in workers:
                processes.enter_context(worker_process(command, **env))
            base = processes.enter_context(gunicorn_server(**env))
            sender = processes.enter_context(
                httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {project.keys.secret_key}"})
            )
            # The first tasks of each delivery process open its connections and load what delivery uses.
            for n in range(2 * int(_option(delivery, "--concurrency"))):
                _latency(sender, sink, f"warm{n}")
            calm = [_latency(sender, sink, f"calm{n}") for n in range(SENDS)]

            tracker = processes.enter_context(
                httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {project.keys.public_key}"})
            )
            for n in range(3 * slots):  # more than the worker can hold: the rest wait in its queue
                assert tracker.post("/v1/track", json={"email": f"f{n}@example.test", "event": "flood"}).is_success
            wait_until(lambda: len(receiver.open) >= slots, timeout=30, what="a webhook call hanging in every slot")
            flooded = [_latency(sender, sink, f"flooded{n}") for n in range(SENDS)]
            assert len(receiver.open) >= slots  # the flood lasted the whole measure
            receiver.stop()  # the hanging calls fail at once, and the workers stop without waiting for them
    finally:
        receiver.stop()
        controller.stop()
    assert statistics.median(flooded) <= 1.5 * statistics.median(calm) + SLACK_SECONDS, (calm, flooded)
