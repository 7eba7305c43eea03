"""Workflow test fixtures: a small API client for workflows (each helper calls the endpoint and asserts it answered
as expected); for webhooks, real receivers on loopback, the domains app's real DNS server, and a record of every
outgoing connection the process makes."""

import socket
import sys
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from contacts.models import Contact

# The loopback DNS server of the domains tests, with the service's resolver pointed at it.
from domains.tests.conftest import _dns_server, _fresh_dns_memory, dns_server, dns_zone, silent_dns  # noqa: F401
from messaging.models import Template
from workflows.tests.receivers import Receiver
from workflows.webhooks import WebhookResult, webhook_send

# Every socket.connect of the process while a test listens. An audit hook cannot be removed: it is added once, by
# the first test that asks, and does nothing while no test listens.
_listeners: list[list] = []


def _audit(event: str, args: tuple) -> None:
    if event == "socket.connect" and _listeners:
        sock, address = args
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            for listener in _listeners:
                listener.append(address[:2])


@pytest.fixture
def connections() -> list[tuple[str, int]]:
    """(host, port) of each TCP or UDP connect made during the test, from any thread: proves what was not dialled."""
    if not getattr(_audit, "added", False):
        sys.addaudithook(_audit)
        _audit.added = True
    made: list[tuple[str, int]] = []
    _listeners.append(made)
    yield made
    _listeners.remove(made)


@pytest.fixture
def start_receiver():
    """`start_receiver(host, tls=None)` starts a receiver on that loopback address; all are stopped after the test."""
    started: list[Receiver] = []

    def start(host: str = "127.0.0.1", **options) -> Receiver:
        started.append(Receiver(host, **options))
        return started[-1]

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def receiver(start_receiver) -> Receiver:
    return start_receiver()


@pytest.fixture
def allow_loopback(settings):
    """The receiver's address exempt from the guard, as a private deployment would exempt its own network."""
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def send(url: str, **overrides) -> WebhookResult:
    """A signed JSON POST to `url`, as a WEBHOOK step sends it; keyword arguments replace any part."""
    call = {
        "url": url,
        "method": "POST",
        "headers": {"Content-Type": "application/json"},
        "body": b'{"contact": {"email": "ann@example.test"}}',
        "secret": SECRET,
        "webhook_id": "msg_2f1c0a",
        **overrides,
    }
    return webhook_send(**call)


@dataclass
class Api:
    client: APIClient

    def call(self, method: str, path: str, body=None, *, status: int):
        response = getattr(self.client, method)(path, body, format="json")
        assert response.status_code == status, response.content
        return response.json() if response.content else None

    def workflow(self, name="Welcome", event="signup", **body) -> dict:
        body = {"name": name, "triggerConfig": {"eventName": event}, **body}
        return self.call("post", "/workflows", body, status=201)

    def get(self, workflow: dict) -> dict:
        return self.call("get", f"/workflows/{workflow['id']}", status=200)

    def trigger(self, workflow: dict) -> dict:
        return next(step for step in self.get(workflow)["steps"] if step["type"] == "TRIGGER")

    def step(self, workflow: dict, step_type: str, config=None, *, status=201, **body) -> dict:
        body = {"type": step_type, "config": config or {}, **body}
        return self.call("post", f"/workflows/{workflow['id']}/steps", body, status=status)

    def link(self, workflow: dict, source: dict, target: dict, *, status=201, **body) -> dict:
        body = {"fromStepId": source["id"], "toStepId": target["id"], **body}
        return self.call("post", f"/workflows/{workflow['id']}/transitions", body, status=status)

    def edges(self, workflow: dict) -> set:
        """(from name, to name, branch or outcome) of every transition."""
        detail = self.get(workflow)
        names = {step["id"]: step["name"] for step in detail["steps"]}
        return {
            (names[t["fromStepId"]], names[t["toStepId"]], t["branch"] or t["waitOutcome"])
            for t in detail["transitions"]
        }

    def enable(self, workflow: dict, *, status=200) -> dict:
        return self.call("patch", f"/workflows/{workflow['id']}", {"enabled": True}, status=status)

    def start(self, workflow: dict, contact, *, status=201, **body) -> dict:
        body = {"contactId": str(contact.id), **body}
        return self.call("post", f"/workflows/{workflow['id']}/executions", body, status=status)


@pytest.fixture
def api(secret_client) -> Api:
    return Api(secret_client)


@pytest.fixture
def template(project) -> Template:
    return Template.objects.create(
        project=project.project, name="Welcome mail", subject="Hi", body="<p>Hi</p>", from_email="hello@alice.test"
    )


@pytest.fixture
def contact(project) -> Contact:
    return Contact.objects.create(project=project.project, email="ann@example.com", data={"plan": "pro"})


@pytest.fixture
def live(api, template) -> dict:
    """An enabled workflow: TRIGGER -> SEND_EMAIL."""
    workflow = api.workflow()
    api.step(workflow, "SEND_EMAIL", {"templateId": str(template.id)}, name="Send welcome")
    api.enable(workflow)
    return workflow


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run `call()` and then what it queued for after its commit: the engine's tasks (eager Celery), the event hook,
    the deliveries."""

    def run(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()

    return run


@pytest.fixture
def track(public_client, committed):
    """POST /v1/track and run what it queued after its commit (the workflows it starts and resumes)."""

    def post(email: str, event: str, data: dict | None = None):
        body = {"email": email, "event": event, **({"data": data} if data is not None else {})}
        response = committed(lambda: public_client.post("/v1/track", body, format="json"))
        assert response.status_code == 200, response.content
        return response.json()

    return post
