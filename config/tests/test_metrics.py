"""GET /metrics: only for the holder of METRICS_TOKEN; requests timed by route template (never the raw path),
answered in front of Django or by it; delivery latency, task failures and the database's figures."""

import json
from datetime import timedelta

import httpx
import pytest
from celery import shared_task
from django.db.models.functions import Now
from prometheus_client.parser import text_string_to_metric_families

from config.leases import BEAT_LEASE, lease_take
from config.models import Lease
from config.tests.processes import celery_worker, gunicorn_server, wait_until
from config.tests.wsgi import wsgi_call
from conftest import client_with
from messaging.models import Email
from messaging.sending.tasks import deliver_emails_task

pytestmark = pytest.mark.django_db
TOKEN = "metrics-token-0123456789"


@pytest.fixture
def scrape(client, settings):
    settings.METRICS_TOKEN = TOKEN

    def read() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain; version=")
        return parsed(response.content.decode())

    return read


def parsed(text: str) -> dict:
    """{(name, labels): value} of every sample of an exposition, and the text itself under "text"."""
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return {**samples, "text": text}


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.parametrize(
    "token, authorization, status",
    [
        ("", f"Bearer {TOKEN}", 404),  # unset: the route does not exist
        (TOKEN, "", 401),
        (TOKEN, "Bearer metrics-token-wrong", 401),
        (TOKEN, f"Basic {TOKEN}", 401),
    ],
)
def test_only_the_token_holder_reads_the_metrics(client, settings, token, authorization, status):
    settings.METRICS_TOKEN = token
    response = client.get("/metrics", HTTP_AUTHORIZATION=authorization)
    assert response.status_code == status
    assert response.json()["error"]["statusCode"] == status


def test_requests_are_counted_by_route_template_and_status(scrape, project):
    count = "herald_http_request_duration_seconds_count"
    contact = {"route": "contacts/<str:pk>", "method": "GET", "status": "404"}
    unknown = {"route": "unmatched", "method": "GET", "status": "404"}
    before = scrape()
    client = client_with(project.keys.secret_key)
    for _ in range(3):
        assert client.get("/contacts/no-such-contact").status_code == 404
    assert client.get("/no/such/route-4242").status_code == 404
    after = scrape()
    assert value(after, count, **contact) - value(before, count, **contact) == 3
    assert value(after, count, **unknown) - value(before, count, **unknown) == 1
    assert "no-such-contact" not in after["text"] and "route-4242" not in after["text"]


@pytest.mark.parametrize("path", ["/v1/track", "/v1/send"])
def test_calls_answered_in_front_of_django_are_counted_as_their_views(scrape, project, path):
    count = "herald_http_request_duration_seconds_count"
    labels = {"route": path.lstrip("/"), "method": "POST", "status": "200"}
    key = project.keys.public_key if path == "/v1/track" else project.keys.secret_key
    body = (
        {"email": "ann@example.test", "event": "signup"}
        if path == "/v1/track"
        else {"to": "ann@example.test", "from": "hello@alice.test", "subject": "Hi", "body": "<p>Hi</p>"}
    )
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    before = scrape()
    answer = wsgi_call("POST", path, body=json.dumps(body).encode(), headers=headers)
    assert answer.status == 200 and answer.by_django is False
    assert value(scrape(), count, **labels) - value(before, count, **labels) == 1


def test_delivery_latency_is_observed_for_each_email_sent(scrape, project, smtp_sink):
    before = scrape()
    response = client_with(project.keys.secret_key).post(
        "/v1/send",
        {"to": ["a@example.test", "b@example.test"], "from": "hi@alice.test", "subject": "S", "body": "<p>B</p>"},
        format="json",
    )
    deliver_emails_task.delay([entry["email"] for entry in response.json()["data"]["emails"]])
    assert len(smtp_sink.received) == 2
    after = scrape()
    name = "herald_email_delivery_latency_seconds"
    assert value(after, f"{name}_count") - value(before, f"{name}_count") == 2
    assert value(after, f"{name}_sum") > value(before, f"{name}_sum")


@shared_task
def always_fails() -> None:
    raise RuntimeError("boom")


def test_task_failures_are_counted_by_task(scrape):
    name, labels = "herald_task_failures_total", {"task": always_fails.name}
    before = value(scrape(), name, **labels)
    # As a worker runs it: the failure is recorded, not raised in the caller as eager tasks of the tests are.
    assert always_fails.apply(throw=False).failed()
    assert value(scrape(), name, **labels) == before + 1


def test_the_database_figures(scrape, project):
    Email.objects.bulk_create(
        Email(project=project.project, to_email=f"r{i}@example.test", from_email="a@alice.test", subject="S")
        for i in range(4)
    )
    samples = scrape()
    assert value(samples, "herald_emails_last_hour", status="QUEUED") == 4
    assert value(samples, "herald_emails_last_hour", status="SENT") == 0
    assert value(samples, "herald_queue_depth", queue="emails_queued") == 4
    assert value(samples, "herald_overdue_work", kind="stuck_emails") == 0
    assert value(samples, "herald_projects_disabled_by_reputation") == 0
    assert value(samples, "herald_figures_up") == 1


def test_the_age_of_the_beat_lease(scrape):
    assert ("herald_beat_lease_age_seconds", ()) not in scrape()  # no beat has taken it yet
    lease_take(name=BEAT_LEASE, holder="beat-host:1:abcd", seconds=30)
    assert 0 <= value(scrape(), "herald_beat_lease_age_seconds") < 5
    # Its leader gone, nobody renews it: the age grows past the lease.
    Lease.objects.update(renewed_at=Now() - timedelta(seconds=100))
    assert 100 <= value(scrape(), "herald_beat_lease_age_seconds") < 105


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_one_scrape_adds_up_every_web_and_worker_process_of_the_host(project, real_broker, smtp_sink, tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
        "METRICS_TOKEN": TOKEN,
        "EMAIL_URL": f"smtp://{smtp_sink.host}:{smtp_sink.port}",
    }
    with gunicorn_server(workers=2, **env) as base, celery_worker(**env):
        for _ in range(20):  # a connection each: the kernel spreads them over both web workers
            assert httpx.get(f"{base}/config").status_code == 200
        sent = httpx.post(
            f"{base}/v1/send",
            json={"to": "ann@example.test", "from": "hi@alice.test", "subject": "S", "body": "<p>B</p>"},
            headers={"Authorization": f"Bearer {project.keys.secret_key}"},
        )
        assert sent.status_code == 200
        wait_until(lambda: smtp_sink.received, timeout=60, what="the worker's delivery")
        scrapes = [httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text for _ in range(4)]
    writers = {path.stem.rsplit("_", 1)[-1] for path in folder.glob("*.db")}
    assert len(writers) >= 3  # two web workers and the worker's pool at least
    for text in scrapes:  # whichever web worker answered
        samples = parsed(text)
        config = {"route": "config", "method": "GET", "status": "200"}
        assert value(samples, "herald_http_request_duration_seconds_count", **config) == 20
        assert value(samples, "herald_email_delivery_latency_seconds_count") == 1
