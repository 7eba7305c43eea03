import json

import pytest

from config.tests.wsgi import wsgi_call
from conftest import REDIS_URL  # noqa: F401 - the tests of this folder import it from here
from contacts.models import Contact
from messaging.models import Email


@pytest.fixture(params=["django", "served"])
def send(request, project, secret_client, django_capture_on_commit_callbacks):
    """POST /v1/send, then run what the request queued for after its commit (eager Celery: the delivery).

    Each test runs twice: through Django's test client (the view), and through the application gunicorn serves,
    which answers a successful send in front of Django (accounts.http.fastroute) and hands any other to the view."""

    def post(body: dict, **extra):
        with django_capture_on_commit_callbacks(execute=True):
            if request.param == "django":
                return secret_client.post("/v1/send", body, format="json", **extra)
            headers = {"Authorization": f"Bearer {project.keys.secret_key}", "Content-Type": "application/json"}
            headers.update({name.removeprefix("HTTP_").replace("_", "-"): value for name, value in extra.items()})
            return wsgi_call("POST", "/v1/send", body=json.dumps(body).encode(), headers=headers)

    return post


def sent_email(project) -> Email:
    """A SENT email to a new contact (ann@example.test), as opens and clicks find it."""
    contact = Contact.objects.create(project=project.project, email="ann@example.test")
    return Email.objects.create(
        project=project.project,
        contact=contact,
        to_email=contact.email,
        from_email="a@alice.test",
        subject="S",
        status=Email.Status.SENT,
    )
