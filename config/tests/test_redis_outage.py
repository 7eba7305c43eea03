"""Redis (the cache and the broker) down under `/v1/send` and `/v1/track`: what follows the write (segment
re-evaluation, the delivery hand-over) fails, and every request is still written once, answered 200, and every
email delivered once when Redis is back."""

import json
import shutil
import time
from collections import Counter
from contextlib import ExitStack

import pytest
from django.db import connection

from config.celery import app
from config.tests.load import Load
from config.tests.processes import celery_worker, gunicorn_server, redis_server, wait_until
from config.tests.wsgi import wsgi_call
from contacts.models import Event
from messaging.models import Email
from messaging.sending.tests.smtp import start_sink
from segments.services import segment_create

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server program"),
]
PRO = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}]}


@pytest.fixture
def tracked_segment(project):
    """Every contact change and event of the project queues a re-evaluation (through the cache and the broker)."""
    return segment_create(project=project.project, name="Pro", condition=PRO, track_membership=True)


@pytest.fixture
def redis_stopped(settings, tracked_segment):
    """The cache is a Redis of the test's own, stopped."""
    with redis_server() as server:
        settings.CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": server.url()}
        }
        server.stop()
        yield


def post(path: str, key: str, body: dict):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return wsgi_call("POST", path, body=json.dumps(body).encode(), headers=headers)


def test_a_track_is_recorded_once_and_answered_200(project, redis_stopped):
    answer = post("/v1/track", project.keys.public_key, {"email": "ann@example.test", "event": "signup"})
    assert answer.status == 200, answer.body
    assert Event.objects.filter(project=project.project, name="signup").count() == 1


def test_a_send_is_stored_once_and_answered_200(project, redis_stopped):
    body = {"to": "ann@example.test", "from": "hi@alice.test", "subject": "Hi", "body": "<p>Hi</p>"}
    answer = post("/v1/send", project.keys.secret_key, body)
    assert answer.status == 200, answer.body
    assert Email.objects.filter(project=project.project).count() == 1


@pytest.mark.integration
def test_redis_stopped_and_restarted_under_load_duplicates_nothing_and_loses_nothing(project, tracked_segment):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    sink, controller = start_sink()
    with redis_server() as redis:
        env = {
            "CACHE_URL": redis.url(0),
            "CELERY_BROKER_URL": redis.url(1),
            "EMAIL_URL": f"smtp://{sink.host}:{sink.port}",
            "DELIVERY_PUBLISH_GRACE_SECONDS": "1",
        }
        keys = project.keys
        try:
            with ExitStack() as processes:
                worker = processes.enter_context(celery_worker(**env))
                base = processes.enter_context(gunicorn_server(workers=2, **env))
                load = Load(base, secret_key=keys.secret_key, public_key=keys.public_key, sender="hi@alice.test")
                with load:
                    time.sleep(3)
                    redis.stop()
                    time.sleep(4)
                    redis.start()
                    time.sleep(3)
                accepted = load.answered("send")
                if worker.poll() is not None:
                    # Celery's worker may exit when it loses its Redis broker (kombu fails to restore its
                    # unacknowledged messages); its supervisor starts it again, as here.
                    processes.enter_context(celery_worker(**env))

                def delivered() -> bool:
                    # The sweeper, as celery-beat runs it every minute: publishes what Redis lost.
                    with app.connection_for_write(redis.url(1)) as connection:
                        app.send_task("messaging.tasks.sweep_emails_task", connection=connection)
                    sent = Email.objects.filter(to_email__in=accepted, status=Email.Status.SENT)
                    return sent.count() == len(accepted)

                wait_until(delivered, timeout=120, what="every accepted email sent", interval=2)
                time.sleep(2)  # a duplicate task would send by now
        finally:
            controller.stop()
    statuses = Counter(load.answers.values())
    assert set(statuses) == {200}, statuses
    stored = Counter(Email.objects.filter(project=project.project).values_list("to_email", flat=True))
    assert set(stored) == accepted and set(stored.values()) == {1}
    delivered = Counter(received.rcpt_tos[0] for received in sink.received)
    assert set(delivered) == accepted and set(delivered.values()) == {1}
    tracked = Counter(Event.objects.filter(name="visit").values_list("contact__email", flat=True))
    assert set(tracked) == load.answered("track") and set(tracked.values()) == {1}
    assert len(accepted) > 50 and len(tracked) > 50, statuses
