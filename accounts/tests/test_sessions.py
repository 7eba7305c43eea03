"""The browser session on the dashboard endpoints: cookie + X-Project-Id + CSRF, the same project scoping as the
secret key, never on /v1/*."""

import pytest
from django.urls import get_resolver
from rest_framework.test import APIClient

from accounts.http.authentication import SessionAuthentication
from accounts.identity.users import user_get_or_create
from accounts.models import Membership
from accounts.tenancy.members import member_add
from accounts.tenancy.services import project_disable
from conftest import PASSWORD, session_client
from contacts.models import Contact

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(project) -> APIClient:
    return session_client("alice@example.test", project.id)


def test_a_session_reads_and_writes_its_project(alice, project):
    created = alice.post("/contacts", {"email": "c@example.test"}, format="json")
    assert created.status_code == 201, created.content
    assert Contact.objects.get().project_id == project.id
    listed = alice.get("/contacts")
    assert [c["email"] for c in listed.json()["data"]] == ["c@example.test"]
    assert listed["RateLimit-Limit"]


def test_without_x_project_id_is_400(project):
    client = session_client("alice@example.test")
    response = client.get("/contacts")
    assert response.status_code == 400 and response.json()["error"]["code"] == "BAD_REQUEST"
    assert "X-Project-Id" in response.json()["error"]["message"]


@pytest.mark.parametrize("which", ["theirs", "missing", "malformed"])
def test_a_project_the_user_is_not_a_member_of_is_403(project, other_project, which):
    project_id = {
        "theirs": other_project.id,
        "missing": "6f1c1f9e-1111-4aaa-8bbb-000000000000",
        "malformed": "not-a-uuid",
    }[which]
    client = session_client("alice@example.test", project_id)
    for response in (client.get("/contacts"), client.post("/contacts", {"email": "x@example.test"}, format="json")):
        assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
    assert not Contact.objects.exists()


def test_unsafe_methods_need_the_csrf_token(project):
    client = session_client("alice@example.test", project.id)
    client.credentials(HTTP_X_PROJECT_ID=str(project.id))  # the X-CSRFToken header dropped
    response = client.post("/contacts", {"email": "c@example.test"}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "CSRF_FAILED"
    assert response.json()["error"]["message"].startswith("CSRF verification failed: CSRF token missing. Send the")
    client.credentials(HTTP_X_PROJECT_ID=str(project.id), HTTP_X_CSRFTOKEN="x" * 32)
    assert client.post("/contacts", {"email": "c@example.test"}, format="json").status_code == 403
    assert not Contact.objects.exists()
    assert client.get("/contacts").status_code == 200  # safe methods need none


def test_v1_endpoints_take_keys_only(alice):
    response = alice.post("/v1/send", {"to": "x@example.test", "subject": "S", "body": "B", "from": "a@alice.test"})
    assert response.status_code == 401
    assert alice.post("/v1/verify", {"email": "x@example.test"}, format="json").status_code == 401


def _views(resolver, prefix=""):
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if hasattr(pattern, "url_patterns"):
            yield from _views(pattern, route)
        elif hasattr(pattern.callback, "cls"):
            yield route, pattern.callback.cls


def test_no_v1_route_accepts_a_session():
    v1 = [(route, view) for route, view in _views(get_resolver()) if route.startswith("v1/")]
    assert v1
    for route, view in v1:
        assert not any(issubclass(a, SessionAuthentication) for a in view().authentication_classes), route


def test_a_disabled_project_is_refused_to_sessions_too(alice, project):
    project_disable(project=project.project, reason="test")
    response = alice.get("/contacts")
    assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_DISABLED"


def test_a_member_may_not_change_domains_but_may_read_them(project, django_capture_on_commit_callbacks):
    owner = Membership.objects.get(project=project.project)
    user_get_or_create(email="member@example.test", password=PASSWORD, verified=True)
    member_add(actor=owner, email="member@example.test", role="MEMBER")
    member = session_client("member@example.test", project.id)
    assert member.get(f"/domains/project/{project.id}").status_code == 200
    response = member.post("/domains", {"domain": "new.example.test"}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    assert member.post("/contacts", {"email": "c@example.test"}, format="json").status_code == 201


def test_a_key_in_the_header_wins_over_the_cookie(alice, other_project):
    alice.credentials(HTTP_AUTHORIZATION=f"Bearer {other_project.keys.secret_key}")
    alice.post("/contacts", {"email": "b@example.test"}, format="json")
    assert Contact.objects.get().project_id == other_project.id
