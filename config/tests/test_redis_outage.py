"""Redis down under `/v1/send` and `/v1/track`, answered in front of Django (the application gunicorn serves): what
follows the write (segment re-evaluation, the delivery hand-over) fails, and the request is still written once and
answered 200."""

import json

import pytest

from config.tests.processes import redis_server
from config.tests.wsgi import wsgi_call
from contacts.models import Event
from messaging.models import Email
from segments.services import segment_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_stopped(settings, project):
    """The cache is a Redis of the test's own, stopped once a first request has cached the key; the project has a
    tracked segment, so every contact change and event queues a re-evaluation through that Redis."""
    segment_create(
        project=project.project,
        name="Pro",
        condition={
            "logic": "AND",
            "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}],
        },
        track_membership=True,
    )
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
