"""A small API client for workflows: each helper calls the endpoint and asserts it answered as expected."""

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from contacts.models import Contact
from messaging.models import Template


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
