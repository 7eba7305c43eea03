import uuid

import pytest

from accounts.models import Job
from config.tests.openapi import assert_documented
from contacts.models import Contact, Event
from contacts.tests.conftest import error_of, subscription_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def bulk(secret_client, run_on_commit):
    def run(action, ids, client=None):
        client = client or secret_client
        response = run_on_commit(
            lambda: client.post(f"/contacts/bulk-{action}", {"contactIds": [str(i) for i in ids]}, format="json")
        )
        assert response.status_code == 202, response.content
        return client.get(f"/contacts/bulk/{response.json()['jobId']}").json()

    return run


@pytest.mark.parametrize(
    ("action", "expected_state", "event"),
    [("subscribe", True, "contact.subscribed"), ("unsubscribe", False, "contact.unsubscribed")],
)
def test_bulk_subscription_changes_and_events(
    bulk, make_contact, other_project, recorded, action, expected_state, event
):
    changing = make_contact("a@example.com", subscribed=not expected_state)
    already = make_contact("b@example.com", subscribed=expected_state)
    foreign = make_contact("c@example.com", subscribed=not expected_state, persona=other_project)
    unknown = uuid.uuid4()
    job = bulk(action, [changing.id, already.id, foreign.id, unknown])
    assert job["status"] == "COMPLETED" and job["type"] == f"BULK_{action.upper()}"
    result = job["result"]
    assert (result["totalRows"], result["successCount"], result["updatedCount"], result["unchangedCount"]) == (
        4,
        2,
        1,
        1,
    )
    assert result["failureCount"] == 2
    assert [(e["row"], e["contactId"], e["error"]) for e in result["errors"]] == [
        (3, str(foreign.id), "Contact not found"),
        (4, str(unknown), "Contact not found"),
    ]
    for contact in (changing, already, foreign):
        contact.refresh_from_db()
    assert changing.subscribed is expected_state and already.subscribed is expected_state
    assert foreign.subscribed is not expected_state
    assert subscription_events() == [event]
    assert subscription_events(changing) == [event]
    assert recorded["single"] == [(event, "a@example.com")]


def test_bulk_delete_removes_contacts_and_their_events(bulk, make_contact, other_project):
    gone = make_contact("a@example.com")
    Event.objects.create(project=gone.project, contact=gone, name="x")
    foreign = make_contact("c@example.com", persona=other_project)
    job = bulk("delete", [gone.id, foreign.id])
    assert job["result"]["deletedCount"] == 1 and job["result"]["failureCount"] == 1
    assert list(Contact.objects.values_list("email", flat=True)) == ["c@example.com"]
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    ("ids", "field", "code"),
    [
        ([str(uuid.uuid4()) for _ in range(1001)], "contactIds", "too_big"),
        ([], "contactIds", "too_small"),
        (["nope"], "contactIds.0", "invalid_string"),
        ("x", "contactIds", "invalid_type"),
    ],
)
@pytest.mark.parametrize("action", ["subscribe", "unsubscribe", "delete"])
def test_bulk_bad_input_is_422_and_queues_nothing(secret_client, action, ids, field, code):
    response = secret_client.post(f"/contacts/bulk-{action}", {"contactIds": ids}, format="json")
    assert response.status_code == 422
    assert (error_of(response)["errors"][0]["field"], error_of(response)["errors"][0]["code"]) == (field, code)
    assert not Job.objects.exists()


def test_bulk_of_1000_is_accepted(bulk):
    job = bulk("unsubscribe", [uuid.uuid4() for _ in range(1000)])
    assert job["result"]["failureCount"] == 1000 and len(job["result"]["errors"]) == 100


def test_bulk_job_of_another_project_is_404(bulk, make_contact, other_client):
    job = bulk("subscribe", [make_contact().id])
    assert error_of(other_client.get(f"/contacts/bulk/{job['id']}"))["code"] == "JOB_NOT_FOUND"


def test_a_job_no_worker_has_taken_yet_answers_as_documented(secret_client, make_contact):
    # Queued without running what the commit would start: the job waits for a worker.
    response = secret_client.post("/contacts/bulk-subscribe", {"contactIds": [str(make_contact().id)]}, format="json")
    path = f"/contacts/bulk/{response.json()['jobId']}"
    status = secret_client.get(path)
    body = status.json()
    assert body["status"] == "PENDING" and body["progress"] == 0
    assert (body["result"], body["error"], body["startedAt"], body["finishedAt"]) == ({}, None, None, None)
    assert_documented(status, method="GET", path=path, template="/contacts/bulk/{job_id}")
