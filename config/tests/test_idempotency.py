import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.utils import timezone

from accounts.http.idempotency import idempotency_claim, idempotency_purge_expired
from accounts.models import IdempotencyRecord, Job
from conftest import client_with, concurrently

pytestmark = [pytest.mark.urls("config.tests.probe_urls")]


def _post(client, key, **body):
    return client.post("/probe/write", {"name": "x", **body}, format="json", HTTP_IDEMPOTENCY_KEY=key)


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "k" * 256, "bad\x07key", "tab\tkey", "caf\u00e9"])
def test_invalid_keys_are_400_and_do_nothing(secret_client, key):
    response = _post(secret_client, key)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "BAD_REQUEST"
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_any_reuse_is_409_with_the_original_request(secret_client):
    assert _post(secret_client, "order-1").status_code == 200
    response = _post(secret_client, "order-1", email="other@body.test")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert error["message"] == 'Idempotency-Key "order-1" has already been used'
    assert error["details"]["key"] == "order-1"
    assert error["details"]["originalRequest"] == "POST /probe/write"
    assert error["details"]["originalStatusCode"] == 200
    assert error["details"]["originalRequestAt"].endswith("Z")
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_keys_are_scoped_to_the_project(project, other_project, secret_client, other_client):
    assert _post(secret_client, "shared-key").status_code == 200
    assert _post(other_client, "shared-key").status_code == 200


@pytest.mark.django_db
def test_a_4xx_releases_the_key_and_a_5xx_keeps_it(secret_client):
    assert _post(secret_client, "fix-me", status=400).status_code == 400
    assert _post(secret_client, "fix-me").status_code == 200
    assert _post(secret_client, "crash", status=500).status_code == 500
    response = _post(secret_client, "crash")
    assert response.status_code == 409
    assert response.json()["error"]["details"]["originalStatusCode"] == 500


@pytest.mark.django_db
def test_an_expired_key_is_free_before_the_purge_and_the_purge_removes_it(project, secret_client):
    assert _post(secret_client, "old").status_code == 200
    IdempotencyRecord.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _post(secret_client, "old").status_code == 200
    IdempotencyRecord.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert idempotency_purge_expired() == 1
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db
def test_the_key_of_a_request_killed_in_flight_is_free_after_its_lease(project, secret_client, settings):
    # The request claimed its key, then its process was killed before it answered: the record stays in flight.
    idempotency_claim(project=project.project, key="killed", method="POST", path="/probe/write")
    response = _post(secret_client, "killed")
    assert response.status_code == 409
    assert response.json()["error"]["details"]["originalStatusCode"] is None
    settings.IDEMPOTENCY_LEASE_SECONDS = 90
    lease = timedelta(seconds=90)
    IdempotencyRecord.objects.update(created_at=F("created_at") - lease + timedelta(seconds=1))
    assert _post(secret_client, "killed").status_code == 409  # the lease is still running
    IdempotencyRecord.objects.update(created_at=F("created_at") - timedelta(seconds=1))
    assert _post(secret_client, "killed").status_code == 200  # the retry takes the key over and does the work
    assert Job.objects.count() == 1
    # An answered request keeps its key for its whole lifetime, however old its claim.
    IdempotencyRecord.objects.update(created_at=F("created_at") - lease - timedelta(seconds=1))
    response = _post(secret_client, "killed")
    assert response.status_code == 409 and response.json()["error"]["details"]["originalStatusCode"] == 200


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_do_the_work_once(project):
    key = project.keys.secret_key
    results = concurrently(lambda _: _post(client_with(key), "race", sleep=0.5).status_code, range(4), threads=4)
    assert sorted(results) == [200, 409, 409, 409]
    assert Job.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite serialises writers: the second claim waits for the first request"
)
def test_reuse_while_the_first_request_runs_reports_it_in_flight(project):
    key = project.keys.secret_key
    first = threading.Thread(target=lambda: (_post(client_with(key), "slow", sleep=1.0), connection.close()))
    first.start()
    try:
        for _ in range(50):
            if IdempotencyRecord.objects.filter(key="slow").exists():
                break
            threading.Event().wait(0.02)
        response = _post(client_with(key), "slow")
        assert response.status_code == 409
        assert response.json()["error"]["details"]["originalStatusCode"] is None
    finally:
        first.join()
        connection.close()
