"""The user's projects: list, create, read, change, keys, webhook secret, reset and delete, with the roles."""

import pytest
from rest_framework.test import APIClient

from accounts.identity.users import user_get_or_create
from accounts.models import Job, Membership, Project
from accounts.tenancy import registry
from accounts.tenancy.members import member_add
from conftest import PASSWORD, client_with, session_client
from contacts.models import Contact, Event
from domains.models import Domain
from messaging.models import Template

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(project) -> APIClient:
    return session_client("alice@example.test")


@pytest.fixture
def with_member(project):
    """A client of a MEMBER and one of an ADMIN of Alice's project."""
    owner = Membership.objects.get(project=project.project)
    clients = {}
    for role in ("MEMBER", "ADMIN"):
        email = f"{role.lower()}@example.test"
        user_get_or_create(email=email, password=PASSWORD, verified=True)
        member_add(actor=owner, email=email, role=role)
        clients[role] = session_client(email)
    return clients


def test_list_shows_the_users_projects_without_secrets(alice, project, other_project):
    response = alice.get("/users/@me/projects")
    assert response.status_code == 200
    [row] = response.json()["data"]
    assert row == {
        "id": str(project.id),
        "name": "Alice's shop",
        "role": "OWNER",
        "publicKey": project.keys.public_key,
        "disabled": False,
        "defaultSenderDomain": "alice.test",
        "createdAt": row["createdAt"],
    }
    assert project.keys.secret_key not in response.content.decode()


def test_create_returns_both_keys_once_and_makes_the_creator_owner(alice):
    response = alice.post("/users/@me/projects", {"name": " New shop "}, format="json")
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["name"] == "New shop" and data["role"] == "OWNER"
    assert data["secretKey"].startswith("sk_") and data["publicKey"].startswith("pk_")
    assert data["webhookSecret"].startswith("whsec_")
    assert client_with(data["secretKey"]).get("/contacts").status_code == 200
    detail = alice.get(f"/users/@me/projects/{data['id']}").json()["data"]
    assert "secretKey" not in detail and detail["trackingMode"] == "ENABLED"


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": 5}, {"name": "x" * 201}])
def test_create_refuses_a_bad_name(alice, body):
    response = alice.post("/users/@me/projects", body, format="json")
    assert response.status_code == 422 and response.json()["error"]["errors"][0]["field"] == "name"
    assert Project.objects.count() == 1


def test_get_one_shows_the_webhook_secret_to_admins_and_owner_only(alice, project, with_member):
    path = f"/users/@me/projects/{project.id}"
    assert alice.get(path).json()["data"]["webhookSecret"].startswith("whsec_")
    assert with_member["ADMIN"].get(path).json()["data"]["webhookSecret"].startswith("whsec_")
    member_view = with_member["MEMBER"].get(path).json()["data"]
    assert member_view["webhookSecret"] is None and member_view["role"] == "MEMBER"


def test_patch_changes_name_and_tracking_mode(alice, project):
    path = f"/users/@me/projects/{project.id}"
    response = alice.patch(path, {"name": "Renamed", "trackingMode": "DISABLED"}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["name"] == "Renamed" and response.json()["data"]["trackingMode"] == "DISABLED"
    bad = alice.patch(path, {"trackingMode": "SOMETIMES"}, format="json")
    assert bad.status_code == 422 and bad.json()["error"]["errors"][0]["field"] == "trackingMode"
    assert Project.objects.get(pk=project.id).tracking_mode == "DISABLED"


def test_regenerate_keys_kills_the_old_keys_at_once(alice, project):
    old = client_with(project.keys.secret_key)
    assert old.get("/contacts").status_code == 200
    response = alice.post(f"/users/@me/projects/{project.id}/regenerate-keys")
    assert response.status_code == 200
    keys = response.json()["data"]
    assert old.get("/contacts").status_code == 401
    assert client_with(keys["secretKey"]).get("/contacts").status_code == 200


def test_regenerate_webhook_secret(alice, project):
    before = alice.get(f"/users/@me/projects/{project.id}").json()["data"]["webhookSecret"]
    after = alice.post(f"/users/@me/projects/{project.id}/regenerate-webhook-secret").json()["data"]["webhookSecret"]
    assert after.startswith("whsec_") and after != before


@pytest.mark.parametrize(
    ("role", "method", "suffix", "allowed"),
    [
        ("MEMBER", "patch", "", False),
        ("MEMBER", "post", "/regenerate-keys", False),
        ("MEMBER", "post", "/regenerate-webhook-secret", False),
        ("ADMIN", "post", "/regenerate-keys", True),
        ("ADMIN", "patch", "", True),
        ("ADMIN", "post", "/reset", False),
        ("ADMIN", "delete", "", False),
        ("MEMBER", "delete", "", False),
    ],
)
def test_roles(project, with_member, role, method, suffix, allowed):
    before = Project.objects.get(pk=project.id)
    response = getattr(with_member[role], method)(f"/users/@me/projects/{project.id}{suffix}", {}, format="json")
    if allowed:
        assert response.status_code == 200, response.content
    else:
        assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
        after = Project.objects.get(pk=project.id)
        assert (after.public_key, after.name) == (before.public_key, before.name)
        assert not Job.objects.exists()


def test_another_users_project_is_access_denied(alice, other_project):
    for suffix in ("", "/regenerate-keys", "/reset"):
        method = "get" if not suffix else "post"
        response = getattr(alice, method)(f"/users/@me/projects/{other_project.id}{suffix}")
        assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
    assert alice.delete(f"/users/@me/projects/{other_project.id}").status_code == 403
    assert Project.objects.filter(pk=other_project.id).exists()


def test_account_endpoints_need_the_csrf_token_on_writes(project):
    client = session_client("alice@example.test")
    client.credentials()
    response = client.post(f"/users/@me/projects/{project.id}/regenerate-keys")
    assert response.status_code == 403 and response.json()["error"]["code"] == "CSRF_FAILED"
    assert client_with(project.keys.secret_key).get("/contacts").status_code == 200


def test_reset_wipes_the_data_and_keeps_domains_members_and_keys(alice, project, committed):
    Contact.objects.create(project=project.project, email="c@example.test")
    Template.objects.create(project=project.project, name="T", from_email="hi@alice.test")
    assert [step.name for step in registry.reset_steps()] == [
        "campaigns",
        "workflows",
        "emails and templates",
        "segments",
        "contacts",
    ]
    response = committed(lambda: alice.post(f"/users/@me/projects/{project.id}/reset"))
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["jobId"])
    assert job.status == "COMPLETED" and job.progress == 100 and job.result["deleted"]["contacts"] == 1
    assert not Contact.objects.exists() and not Template.objects.exists() and not Event.objects.exists()
    assert Domain.objects.filter(project=project.project).exists()
    assert Membership.objects.filter(project=project.project).exists()
    assert client_with(project.keys.secret_key).get("/contacts").status_code == 200


def test_reset_touches_no_other_project(alice, project, other_project, committed):
    Contact.objects.create(project=other_project.project, email="c@example.test")
    committed(lambda: alice.post(f"/users/@me/projects/{project.id}/reset"))
    assert Contact.objects.filter(project=other_project.project).count() == 1


def test_delete_removes_the_project_and_its_keys(alice, project):
    key_client = client_with(project.keys.secret_key)
    assert key_client.get("/contacts").status_code == 200
    assert alice.delete(f"/users/@me/projects/{project.id}").status_code == 204
    assert not Project.objects.filter(pk=project.id).exists()
    assert key_client.get("/contacts").status_code == 401
