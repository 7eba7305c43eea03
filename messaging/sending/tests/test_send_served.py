"""`POST /v1/send` as gunicorn serves it (accounts.http.fastroute): a successful send is answered in front of Django
exactly as the view answers it; every other goes to the view (the `send` fixture runs the whole send suite both
ways), counted once by the rate limit."""

import json
import re

import pytest

from config.tests.wsgi import assert_answered_alike, wsgi_call
from messaging.models import Email

pytestmark = pytest.mark.django_db


def served_send(key: str, payload: dict):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return wsgi_call("POST", "/v1/send", body=json.dumps(payload).encode(), headers=headers)


def payload(**overrides) -> dict:
    return {"to": "ann@example.test", "from": "hello@alice.test", "subject": "Hi", "body": "<p>Hi</p>", **overrides}


def test_a_served_send_has_the_views_headers_and_queues_the_email(project, secret_client):
    served = served_send(project.keys.secret_key, payload())
    viewed = secret_client.post("/v1/send", payload(to="bob@example.test"), format="json")
    assert (served.status, served.by_django, viewed.status_code) == (200, False, 200)
    assert_answered_alike(served, viewed)  # header values too, the rate limit counting the view's call second
    assert_answered_alike(viewed, served_send(project.keys.secret_key, payload(to="cyd@example.test")))
    [entry] = served.json()["data"]["emails"]
    time = served.json()["data"]["timestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", time)
    assert (
        served.body
        == (
            f'{{"success":true,"data":{{"emails":[{{"contact":{{"id":"{entry["contact"]["id"]}",'
            f'"email":"ann@example.test"}},"email":"{entry["email"]}"}}],"timestamp":"{time}"}}}}'
        ).encode()
    )
    email = Email.objects.get(id=entry["email"])
    assert (email.project_id, email.status, email.to_email) == (project.project.id, "QUEUED", "ann@example.test")


def test_a_send_refused_after_it_was_counted_is_counted_once(project, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 5
    refused = served_send(project.keys.secret_key, payload(**{"from": "hello@nowhere.test"}))
    assert refused.status == 403 and refused.json()["error"]["code"] == "DOMAIN_NOT_VERIFIED"
    assert refused.headers["RateLimit-Remaining"] == "4"
    assert served_send(project.keys.secret_key, payload()).headers["RateLimit-Remaining"] == "3"
    assert Email.objects.count() == 1


def test_another_projects_key_sends_as_that_project_only(project, other_project):
    served = served_send(other_project.keys.secret_key, payload())
    assert served.status == 403  # alice.test is not a domain of the other project
    assert served_send(project.keys.public_key, payload()).json()["error"]["code"] == "INVALID_API_KEY"
    assert not Email.objects.exists()
