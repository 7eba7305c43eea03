"""The engine under a real Celery worker, a real web server and a Redis of the test's own, with the worker SIGKILLed
and Redis killed and started again empty while executions run and wait: every execution finishes, once, and no
step's effect is doubled (one email row per contact, one webhook delivery id per contact)."""

import os
import shutil
import signal
import threading
import time
from collections import Counter
from contextlib import ExitStack

import httpx
import pytest
from django.db import connection

from config.celery import app
from config.tests.processes import celery_worker, children, gunicorn_server, redis_server, served_env, wait_until
from contacts.models import Contact
from messaging.models import Email, EmailType, Template
from messaging.sending.tests.smtp import start_sink
from workflows import services
from workflows.models import StepType, WorkflowExecution, WorkflowStepExecution
from workflows.tests.receivers import Receiver

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.integration,
    # The sweeps are published by name, as celery-beat does, to the test's own Redis.
    pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored"),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server program"),
]
CONTACTS = 60


def _workflow(project, receiver: Receiver):
    """TRIGGER(signup) -> SEND_EMAIL -> DELAY 3 s -> WEBHOOK -> UPDATE_CONTACT {done: true}."""
    template = Template.objects.create(
        project=project, name="Hi", subject="Hi {{ email }}", body="<p>Hi</p>", from_email="hello@alice.test",
        type=EmailType.TRANSACTIONAL,
    )  # fmt: skip
    workflow = services.workflow_create(project=project, name="Chaos", event_name="signup")
    services.step_add(workflow=workflow, step_type=StepType.SEND_EMAIL, config={"templateId": str(template.id)})
    services.step_add(workflow=workflow, step_type=StepType.DELAY, config={"amount": 0.05, "unit": "minutes"})
    services.step_add(workflow=workflow, step_type=StepType.WEBHOOK, config={"url": receiver.url("/hook")})
    services.step_add(workflow=workflow, step_type=StepType.UPDATE_CONTACT, config={"updates": {"done": True}})
    services.workflow_update(workflow=workflow, enabled=True)
    return workflow


def _track(base: str, key: str, emails: list[str]) -> None:
    with httpx.Client(base_url=base, timeout=30) as client:
        for email in emails:
            answer = client.post(
                "/v1/track", json={"email": email, "event": "signup"}, headers={"Authorization": f"Bearer {key}"}
            )
            assert answer.status_code == 200, answer.text


def _sweep(broker: str) -> None:
    """What celery-beat does every 15 s (the engine's sweep) and every minute (delivery's), here every second."""
    try:
        with app.connection_for_write(broker) as conn:
            for name in ("workflows.tasks.sweep_executions_task", "messaging.tasks.sweep_emails_task"):
                app.send_task(name, connection=conn)
    except Exception:  # Redis is down: the next round publishes them
        pass


def _kill(worker) -> None:
    for pid in [*children(worker.pid), worker.pid]:
        os.kill(pid, signal.SIGKILL)
    worker.wait()


def test_killed_workers_and_a_restarted_redis_lose_and_double_nothing(project):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent workers need PostgreSQL")
    sink, controller = start_sink()
    receiver = Receiver("127.0.0.1")
    workflow = _workflow(project.project, receiver)
    emails = [f"c{n}@example.test" for n in range(CONTACTS)]
    try:
        with redis_server() as redis, ExitStack() as processes:
            env = {
                **served_env(redis, sink),
                # Long enough that a live worker on a loaded machine finishes a step inside its lease: this test is
                # about workers that die, and a step that outlives its lease runs twice (docs/workflows.md).
                "WORKFLOW_STEP_LEASE_SECONDS": "15",
                # Short enough that the lease stays 15 s (it is never under three webhook calls' bound).
                "WEBHOOK_TIMEOUT_SECONDS": "3",
                "WORKFLOW_PUBLISH_GRACE_SECONDS": "2",
                "DELIVERY_PUBLISH_GRACE_SECONDS": "1",
                "DELIVERY_LEASE_SECONDS": "4",
            }
            worker = processes.enter_context(celery_worker(**env))
            base = processes.enter_context(gunicorn_server(workers=1, **env))
            tracking = threading.Thread(target=_track, args=(base, project.keys.public_key, emails))
            tracking.start()
            wait_until(lambda: WorkflowExecution.objects.count() >= CONTACTS // 3, timeout=60, what="first starts")
            _kill(worker)  # mid-step for some, while others wait in their DELAY
            redis.stop()
            time.sleep(2)
            redis.start()  # empty: every queued task and ETA is gone
            tracking.join()
            worker = processes.enter_context(celery_worker(**env))
            wait_until(
                lambda: WorkflowStepExecution.objects.filter(step__type=StepType.WEBHOOK).exists(),
                timeout=60,
                what="a webhook step",
                interval=0.05,
            )
            _kill(worker)  # again, now that steps run after the delay
            worker = processes.enter_context(celery_worker(**env))

            def finished() -> bool:
                _sweep(redis.url(1))
                return WorkflowExecution.objects.filter(workflow=workflow, status="COMPLETED").count() == CONTACTS

            try:
                # Generous: on a busy machine the two restarted workers take their time.
                wait_until(finished, timeout=300, what="every execution completed", interval=1)
            except AssertionError:
                states = Counter(WorkflowExecution.objects.values_list("status", "current_step__type"))
                steps = Counter(WorkflowStepExecution.objects.values_list("step__type", "status"))
                reasons = Counter(WorkflowExecution.objects.exclude(exit_reason="").values_list("exit_reason"))
                raise AssertionError(f"not all completed: {states}; steps: {steps}; why: {reasons}") from None
            time.sleep(2)  # a duplicate would show by now
    finally:
        controller.stop()
        receiver.stop()

    executions = WorkflowExecution.objects.filter(workflow=workflow)
    assert Counter(executions.values_list("contact__email", flat=True)) == Counter(emails)
    assert set(executions.values_list("status", flat=True)) == {"COMPLETED"}
    steps = WorkflowStepExecution.objects.filter(execution__workflow=workflow)
    assert steps.count() == CONTACTS * 5 and set(steps.values_list("status", flat=True)) == {"COMPLETED"}
    stored = Counter(Email.objects.filter(workflow_id=workflow.id).values_list("to_email", flat=True))
    assert stored == Counter(emails)
    # A webhook call a killed worker made may be repeated, always under its step's delivery id.
    delivery_ids = {request.headers["webhook-id"] for request in receiver.requests}
    assert len(delivery_ids) == CONTACTS
    assert Contact.objects.filter(project=project.project, data__done=True).count() == CONTACTS
    wait_until(lambda: len({m.rcpt_tos[0] for m in sink.received}) == CONTACTS, timeout=30, what="every email sent")
