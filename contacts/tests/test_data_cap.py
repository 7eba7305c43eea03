"""A contact's data is capped at 256 KB in all (docs/api/contacts.md), whichever path merges into it; one request's data at
64 KB. A write past the cap is refused at `data` and changes nothing; a write that removes keys always goes through."""

import pytest

from contacts.models import Contact
from contacts.tests.conftest import error_of
from contacts.tests.test_api_import import upload

pytestmark = pytest.mark.django_db

CHUNK = "x" * 60_000  # four of these and some more pass 256 KB; one request carries at most one
HELD = {f"k{i}": CHUNK for i in range(4)}  # 240 KB


@pytest.fixture
def full(make_contact):
    return make_contact("ada@example.com", data=dict(HELD))


def assert_refused(response):
    assert response.status_code == 422, response.content
    error = error_of(response)["errors"][0]
    assert error["field"] == "data" and error["code"] == "too_big"
    assert "256 KB" in error["message"]


def test_a_patch_past_the_cap_is_refused_and_changes_nothing(secret_client, full):
    response = secret_client.patch(f"/contacts/{full.id}", {"data": {"k5": CHUNK}}, format="json")
    assert_refused(response)
    full.refresh_from_db()
    assert full.data == HELD


def test_an_upsert_past_the_cap_is_refused(secret_client, full):
    assert_refused(secret_client.post("/contacts", {"email": full.email, "data": {"k5": CHUNK}}, format="json"))
    assert Contact.objects.get().data == HELD


def test_a_track_past_the_cap_is_refused_and_records_nothing(track_client, full):
    response = track_client.post("/v1/track", {"email": full.email, "event": "e", "data": {"k5": CHUNK}})
    assert_refused(response)
    assert Contact.objects.get().data == HELD
    assert not full.events.exists()


def test_replacing_or_removing_keys_of_a_full_contact_goes_through(secret_client, full):
    response = secret_client.patch(f"/contacts/{full.id}", {"data": {"k0": "short", "k1": None}}, format="json")
    assert response.status_code == 200
    full.refresh_from_db()
    assert set(full.data) == {"k0", "k2", "k3"} and full.data["k0"] == "short"


def test_an_import_row_past_the_cap_is_reported_and_the_others_go_on(secret_client, run_on_commit, full):
    content = f"email,k5\n{full.email},{CHUNK}\nbob@example.com,{CHUNK}\n"
    response = run_on_commit(lambda: upload(secret_client, content))
    job = secret_client.get(f"/contacts/import/{response.json()['jobId']}").json()
    assert job["status"] == "COMPLETED"
    assert job["result"]["failureCount"] == 1 and job["result"]["createdCount"] == 1
    assert job["result"]["unchangedCount"] == 0
    assert job["result"]["errors"][0]["row"] == 2 and "256 KB" in job["result"]["errors"][0]["error"]
    assert Contact.objects.get(email=full.email).data == HELD
    assert Contact.objects.get(email="bob@example.com").data == {"k5": CHUNK}


def test_another_projects_full_contact_does_not_limit_ours(other_client, secret_client, make_contact):
    make_contact("ada@example.com", data=dict(HELD))
    response = other_client.post("/contacts", {"email": "ada@example.com", "data": {"k5": CHUNK}}, format="json")
    assert response.status_code in (200, 201)
