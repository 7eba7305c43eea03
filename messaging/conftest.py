import json

import pytest

from config.tests.wsgi import wsgi_call


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
