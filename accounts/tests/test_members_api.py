"""Members and invitations of a project, and its setup state."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from rest_framework.test import APIClient

from accounts.identity.users import user_get_or_create
from accounts.models import Invitation, Membership
from accounts.tenancy.members import member_add
from conftest import PASSWORD, browser_client, session_client
from contacts.models import Contact

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(project) -> APIClient:
    return session_client("alice@example.test")


@pytest.fixture
def carol(db):
    user, _ = user_get_or_create(email="carol@example.test", password=PASSWORD, verified=True)
    return user


def _members(client, project_id):
    return {(m["email"], m["role"]) for m in client.get(f"/projects/{project_id}/members").json()["data"]}


def test_adding_an_existing_user(alice, project, carol):
    response = alice.post(f"/projects/{project.id}/members", {"email": "Carol@example.test", "role": "ADMIN"})
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["userId"] == str(carol.id) and data["status"] == "active" and data["role"] == "ADMIN"
    assert _members(alice, project.id) == {("alice@example.test", "OWNER"), ("carol@example.test", "ADMIN")}
    listed = alice.get(f"/projects/{project.id}/members").json()["data"]
    assert set(listed[0]) == {"userId", "email", "role", "createdAt"}


def test_a_member_twice_is_409(alice, project, carol):
    alice.post(f"/projects/{project.id}/members", {"email": "carol@example.test"})
    again = alice.post(f"/projects/{project.id}/members", {"email": "carol@example.test", "role": "ADMIN"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "CONFLICT"
    assert Membership.objects.get(user=carol).role == "MEMBER"


def test_inviting_an_unknown_address_mails_a_signup_link(alice, project, smtp_sink, committed, settings):
    settings.DASHBOARD_URL = "https://app.example.test"  # the links open the dashboard's pages
    response = committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test"}))
    assert response.status_code == 201
    assert response.json()["data"]["status"] == "invited" and response.json()["data"]["userId"] is None
    [message] = smtp_sink.received
    assert message.rcpt_tos == ["dave@example.test"] and "Alice's shop" in message.text
    assert "https://app.example.test/signup?token=" in message.text
    twice = alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test"})
    assert twice.status_code == 409 and Invitation.objects.count() == 1


def test_an_invitee_joins_by_signing_up_with_the_link(alice, project, smtp_sink, committed):
    committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test", "role": "ADMIN"}))
    link = re.search(r"https?://\S+", smtp_sink.received[0].text).group(0)
    token = parse_qs(urlsplit(link).query)["token"][0]
    dave = browser_client()
    signed_up = dave.post(
        "/auth/signup", {"email": "dave@example.test", "password": "a long and unusual passphrase", "token": token}
    )
    assert signed_up.status_code == 201 and signed_up.json()["data"]["user"]["emailVerified"] is True
    assert ("dave@example.test", "ADMIN") in _members(alice, project.id)
    assert not Invitation.objects.exists()


def test_an_invitee_who_signs_up_without_the_link_joins_on_verifying(alice, project, smtp_sink, committed):
    committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test"}))
    dave = browser_client()
    committed(lambda: dave.post("/auth/signup", {"email": "dave@example.test", "password": "a long passphrase!"}))
    assert ("dave@example.test", "MEMBER") not in _members(alice, project.id)
    verify = next(m for m in smtp_sink.received if "/verify-email" in m.text)
    token = parse_qs(urlsplit(re.search(r"https?://\S+", verify.text).group(0)).query)["token"][0]
    assert dave.post("/auth/verify-email", {"token": token}).status_code == 200
    assert ("dave@example.test", "MEMBER") in _members(alice, project.id)


def test_a_logged_in_user_may_accept_an_invitation_to_another_address(alice, project, carol, smtp_sink, committed):
    committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "carol.work@example.test"}))
    token = parse_qs(urlsplit(re.search(r"https?://\S+", smtp_sink.received[0].text).group(0)).query)["token"][0]
    carol_client = session_client("carol@example.test")
    response = carol_client.post("/auth/accept-invitation", {"token": token}, format="json")
    assert response.status_code == 200 and response.json()["data"]["id"] == str(project.id)
    assert ("carol@example.test", "MEMBER") in _members(alice, project.id)
    used = carol_client.post("/auth/accept-invitation", {"token": token}, format="json")
    assert used.status_code == 400 and used.json()["error"]["code"] == "INVALID_TOKEN"


def _link_token(message, path: str) -> str:
    link = next(link for link in re.findall(r"https?://\S+", message.text) if urlsplit(link).path == path)
    return parse_qs(urlsplit(link).query)["token"][0]


def test_an_account_that_never_verified_its_address_is_invited_not_added(alice, project, smtp_sink, committed):
    """Someone signs up with another person's address and waits: adding that address to a project gives them
    nothing. The invitation goes to the mailbox, and the mailbox's owner joins by proving it (a password reset)."""
    squatter = browser_client()
    assert (
        squatter.post("/auth/signup", {"email": "cfo@corp.test", "password": "a squatter's passphrase"}).status_code
        == 201
    )
    added = committed(
        lambda: alice.post(f"/projects/{project.id}/members", {"email": "CFO@corp.test", "role": "ADMIN"})
    )
    assert added.status_code == 201, added.content
    assert added.json()["data"]["status"] == "invited" and added.json()["data"]["userId"] is None
    assert squatter.get("/users/@me/projects").json()["data"] == []
    squatter.credentials(HTTP_X_PROJECT_ID=str(project.id))
    assert squatter.get("/contacts").json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
    assert _members(alice, project.id) == {("alice@example.test", "OWNER")}
    [invitation] = [m for m in smtp_sink.received if "/signup" in m.text]
    assert invitation.rcpt_tos == ["cfo@corp.test"]

    cfo = browser_client()
    committed(lambda: cfo.post("/auth/request-password-reset", {"email": "cfo@corp.test"}))
    token = _link_token(smtp_sink.received[-1], "/reset-password")
    assert cfo.post("/auth/reset-password", {"token": token, "password": "the cfo's own passphrase"}).status_code == 200
    assert ("cfo@corp.test", "ADMIN") in _members(alice, project.id)
    assert squatter.get("/users/@me").status_code == 401  # the squatter's session ended with their password
    cfo_session = session_client("cfo@corp.test", password="the cfo's own passphrase")
    assert [row["role"] for row in cfo_session.get("/users/@me/projects").json()["data"]] == ["ADMIN"]


def test_an_unverified_account_joins_by_accepting_with_the_token_mailed_to_it(alice, project, smtp_sink, committed):
    dave = browser_client()
    committed(lambda: dave.post("/auth/signup", {"email": "dave@example.test", "password": "a long passphrase!"}))
    committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test"}))
    assert Invitation.objects.filter(email="dave@example.test").exists()
    token = _link_token(next(m for m in smtp_sink.received if "/signup" in m.text), "/signup")
    accepted = dave.post("/auth/accept-invitation", {"token": token}, HTTP_X_CSRFTOKEN=dave.cookies["csrftoken"].value)
    assert accepted.status_code == 200 and accepted.json()["data"]["id"] == str(project.id)
    assert dave.get("/users/@me").json()["emailVerified"] is True
    assert ("dave@example.test", "MEMBER") in _members(alice, project.id)


def test_an_unverified_account_joins_on_verifying_its_address(alice, project, other_project, smtp_sink, committed):
    dave = browser_client()
    committed(lambda: dave.post("/auth/signup", {"email": "dave@example.test", "password": "a long passphrase!"}))
    committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test", "role": "ADMIN"}))
    assert ("dave@example.test", "ADMIN") not in _members(alice, project.id)
    token = _link_token(next(m for m in smtp_sink.received if "/verify-email" in m.text), "/verify-email")
    assert dave.post("/auth/verify-email", {"token": token}).status_code == 200
    assert ("dave@example.test", "ADMIN") in _members(alice, project.id)
    assert [row["id"] for row in dave.get("/users/@me/projects").json()["data"]] == [str(project.id)]


@pytest.fixture
def member(project, carol):
    member_add(actor=Membership.objects.get(project=project.project, role="OWNER"), email=carol.email, role="MEMBER")
    return session_client(carol.email)


def test_a_member_cannot_manage_members(member, project, carol):
    owner_id = Membership.objects.get(project=project.project, role="OWNER").user_id
    for response in (
        member.post(f"/projects/{project.id}/members", {"email": "x@example.test"}),
        member.patch(f"/projects/{project.id}/members/{owner_id}", {"role": "MEMBER"}),
        member.patch(f"/projects/{project.id}/members/{carol.id}", {"role": "ADMIN"}),
    ):
        assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    assert Membership.objects.get(user=carol).role == "MEMBER" and not Invitation.objects.exists()
    assert len(member.get(f"/projects/{project.id}/members").json()["data"]) == 2


def test_the_owner_can_be_neither_changed_nor_removed(alice, project):
    owner = Membership.objects.get(project=project.project, role="OWNER")
    for response in (
        alice.patch(f"/projects/{project.id}/members/{owner.user_id}", {"role": "ADMIN"}),
        alice.delete(f"/projects/{project.id}/members/{owner.user_id}"),
    ):
        assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    assert Membership.objects.get(pk=owner.pk).role == "OWNER"


def test_no_one_is_made_owner(alice, project, carol, member):
    for response in (
        alice.post(f"/projects/{project.id}/members", {"email": "new@example.test", "role": "OWNER"}),
        alice.patch(f"/projects/{project.id}/members/{carol.id}", {"role": "OWNER"}),
    ):
        assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    assert Membership.objects.filter(role="OWNER").count() == 1 and not Invitation.objects.exists()


def test_an_admin_changes_roles_and_removes_members(alice, project, carol, member):
    changed = alice.patch(f"/projects/{project.id}/members/{carol.id}", {"role": "ADMIN"})
    assert changed.status_code == 200 and changed.json()["data"]["role"] == "ADMIN"
    bad = alice.patch(f"/projects/{project.id}/members/{carol.id}", {"role": "BOSS"})
    assert bad.status_code == 422 and bad.json()["error"]["errors"][0]["field"] == "role"
    assert alice.delete(f"/projects/{project.id}/members/{carol.id}").status_code == 204
    assert not Membership.objects.filter(user=carol).exists()
    assert alice.delete(f"/projects/{project.id}/members/{carol.id}").status_code == 404


def test_a_member_may_leave(member, project, carol):
    assert member.delete(f"/projects/{project.id}/members/{carol.id}").status_code == 204
    assert not Membership.objects.filter(user=carol).exists()
    gone = member.get(f"/projects/{project.id}/members")
    assert gone.status_code == 403 and gone.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"


def test_members_of_another_project_are_access_denied(alice, other_project):
    response = alice.get(f"/projects/{other_project.id}/members")
    assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"


def test_setup_state(alice, project):
    Contact.objects.create(project=project.project, email="c@example.test")
    response = alice.get(f"/projects/{project.id}/setup-state")
    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "data": {
            "hasVerifiedDomain": True,
            "contactCount": 1,
            "hasTemplate": False,
            "lastCampaignSentAt": None,
            "hasEnabledWorkflow": False,
            "hasSubscription": False,
        },
    }
