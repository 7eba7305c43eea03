"""LOG_FORMAT=json: every line written while serving a request carries its request id and, once the request is
authenticated, its project's id; so does every line of a task the request queued, in a real worker too."""

import io
import json
import logging
from pathlib import Path

import pytest

from accounts.models import Job
from config.logs import JsonFormatter
from config.tests.processes import celery_worker, wait_until
from conftest import client_with
from contacts.models import Contact
from contacts.signals import events_recorded
from core.http.middleware import RequestIdLogFilter

REQUEST_ID = "req-observe-0123456789"


@pytest.fixture
def json_log():
    """Every line logged at INFO and above, as the settings' JSON handler writes it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdLogFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def events_logged():
    """A receiver of the contacts hook that logs, as any code serving a request or running a task may."""

    def log_events(sender, project, events, **kwargs):
        logging.getLogger("test.receiver").warning("%d event(s) of %s recorded", len(events), events[0].name)

    events_recorded.connect(log_events, dispatch_uid="test-events-logged")
    yield
    events_recorded.disconnect(dispatch_uid="test-events-logged")


def test_the_json_settings_write_one_object_per_line(settings):
    assert settings.LOGGING["formatters"]["json"] == {"()": "config.logs.JsonFormatter"}
    record = logging.LogRecord("herald", logging.ERROR, __file__, 1, "line\nwith %s", ('a quote "',), None)
    RequestIdLogFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert json.loads(line) | {"time": "-"} == {
        "time": "-",
        "level": "ERROR",
        "logger": "herald",
        "message": 'line\nwith a quote "',
        "request_id": "-",
    }


@pytest.mark.django_db(transaction=True)  # the hook and the task run after the commit, inside the request
def test_lines_of_a_request_and_of_the_tasks_it_ran_carry_its_ids(project, other_project, json_log, events_logged):
    contact = Contact.objects.create(project=project.project, email="ann@example.test", subscribed=False)
    client = client_with(project.keys.secret_key)

    tracked = client_with(project.keys.public_key).post(
        "/v1/track", {"email": "bob@example.test", "event": "signup"}, format="json", HTTP_X_REQUEST_ID=REQUEST_ID
    )
    bulk = client.post("/contacts/bulk-subscribe", {"contactIds": [str(contact.id)]}, format="json")
    other = client_with(other_project.keys.public_key).post(
        "/v1/track", {"email": "eve@example.test", "event": "signup"}, format="json"
    )

    assert (tracked.status_code, bulk.status_code, other.status_code) == (200, 202, 200)
    lines = {(line["message"], line["request_id"]): line for line in json_log() if line["logger"] == "test.receiver"}
    assert lines[("1 event(s) of signup recorded", REQUEST_ID)]["project_id"] == str(project.id)
    # The bulk job ran as a task (eagerly here) queued by the request: its lines carry the request's ids.
    task_line = lines[("1 event(s) of contact.subscribed recorded", bulk["X-Request-Id"])]
    assert task_line["project_id"] == str(project.id)
    assert lines[("1 event(s) of signup recorded", other["X-Request-Id"])]["project_id"] == str(other_project.id)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_workers_lines_carry_the_ids_of_the_request_that_queued_its_task(project, real_broker, tmp_path):
    contact = Contact.objects.create(project=project.project, email="ann@example.test", subscribed=False)
    log = Path(tmp_path / "worker.log")
    with log.open("w") as stderr, celery_worker(stderr=stderr, LOG_FORMAT="json", LOG_LEVEL="INFO"):
        response = client_with(project.keys.secret_key).post(
            "/contacts/bulk-subscribe", {"contactIds": [str(contact.id)]}, format="json", HTTP_X_REQUEST_ID=REQUEST_ID
        )
        job_id = response.json()["jobId"]
        wait_until(
            lambda: Job.objects.get(pk=job_id).status == Job.Status.COMPLETED, timeout=60, what="the worker's job"
        )
        wait_until(lambda: "succeeded" in log.read_text(), timeout=10, what="the task's last line")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    finished = [line for line in lines if line["logger"] == "celery.app.trace" and "succeeded" in line["message"]]
    assert finished, lines
    assert {(line["request_id"], line.get("project_id")) for line in finished} == {(REQUEST_ID, str(project.id))}
