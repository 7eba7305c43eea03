"""A project's pending invitations: listed to its members, withdrawn by its admins (and by operators in the admin),
after which their links no longer work."""

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.test import APIClient

from accounts.identity.invitations import address_proven
from accounts.identity.users import user_get_or_create
from accounts.models import Invitation, Membership, User
from accounts.tenancy.members import member_add
from conftest import PASSWORD, browser_client, session_client

pytestmark = pytest.mark.django_db

EXPIRED = "This invitation has been withdrawn or already accepted"


@pytest.fixture
def alice(project) -> APIClient:
    return session_client(project.owner_email)


@pytest.fixture
def bob(other_project) -> APIClient:
    return session_client(other_project.owner_email)


@pytest.fixture
def carol(project) -> APIClient:
    """A MEMBER of Alice's project."""
    user, _ = user_get_or_create(email="carol@example.test", password=PASSWORD, verified=True)
    member_add(actor=Membership.objects.get(project=project.project, role="OWNER"), email=user.email, role="MEMBER")
    return session_client(user.email)


def invite(client, project_id, email: str, role: str = "MEMBER"):
    response = client.post(f"/projects/{project_id}/members", {"email": email, "role": role})
    assert response.status_code == 201 and response.json()["data"]["status"] == "invited", response.content
    return Invitation.objects.get(project_id=project_id, email=email)


def listed(client, project_id) -> list[dict]:
    response = client.get(f"/projects/{project_id}/invitations")
    assert response.status_code == 200, response.content
    assert response.json()["success"] is True
    return response.json()["data"]


def token_of(message) -> str:
    return parse_qs(urlsplit(re.search(r"https?://\S+", message.text).group(0)).query)["token"][0]


def test_any_member_lists_the_pending_invitations(alice, carol, project, settings):
    dave = invite(alice, project.id, "dave@example.test", "ADMIN")
    invite(alice, project.id, "erin@example.test")
    rows = listed(carol, project.id)
    assert [(row["email"], row["role"]) for row in rows] == [
        ("dave@example.test", "ADMIN"),
        ("erin@example.test", "MEMBER"),
    ]
    assert set(rows[0]) == {"id", "email", "role", "invitedAt", "expiresAt"}
    assert rows[0]["id"] == str(dave.id)
    invited_at, expires_at = parse_datetime(rows[0]["invitedAt"]), parse_datetime(rows[0]["expiresAt"])
    assert abs(invited_at - timezone.now()) < timedelta(minutes=1)
    assert expires_at - invited_at == timedelta(seconds=settings.INVITATION_TIMEOUT)


def test_expired_and_accepted_invitations_are_not_listed(alice, project, smtp_sink, committed):
    committed(lambda: invite(alice, project.id, "dave@example.test"))
    erin = committed(lambda: invite(alice, project.id, "erin@example.test"))
    Invitation.objects.filter(pk=erin.pk).update(sent_at=timezone.now() - timedelta(days=8))
    dave_token = token_of(next(m for m in smtp_sink.received if m.rcpt_tos == ["dave@example.test"]))
    assert [row["email"] for row in listed(alice, project.id)] == ["dave@example.test"]

    signed_up = browser_client().post(
        "/auth/signup", {"email": "dave@example.test", "password": "a long passphrase!", "token": dave_token}
    )
    assert signed_up.status_code == 201
    assert listed(alice, project.id) == []


def test_an_expired_invitation_is_not_joined(alice, bob, project, other_project, settings):
    settings.ACCOUNT_EMAIL_COOLDOWN_SECONDS = 0  # the same address twice within the minute
    expired = invite(alice, project.id, "erin@example.test")
    Invitation.objects.filter(pk=expired.pk).update(sent_at=timezone.now() - timedelta(days=8))
    invite(bob, other_project.id, "erin@example.test")
    erin, _ = user_get_or_create(email="erin@example.test", password=PASSWORD)
    address_proven(user=erin)
    assert [m.project_id for m in Membership.objects.filter(user=erin)] == [other_project.id]


def test_inviting_again_replaces_an_expired_invitation(alice, project, smtp_sink, committed, settings):
    settings.ACCOUNT_EMAIL_COOLDOWN_SECONDS = 0  # the same address twice within the minute
    old = committed(lambda: invite(alice, project.id, "erin@example.test"))
    Invitation.objects.filter(pk=old.pk).update(sent_at=timezone.now() - timedelta(days=8))
    again = committed(lambda: invite(alice, project.id, "erin@example.test", "ADMIN"))
    assert again.pk != old.pk and not Invitation.objects.filter(pk=old.pk).exists()
    assert [(row["email"], row["role"]) for row in listed(alice, project.id)] == [("erin@example.test", "ADMIN")]
    assert [m.rcpt_tos for m in smtp_sink.received] == [["erin@example.test"]] * 2


def test_a_member_of_another_project_can_neither_list_nor_withdraw(alice, bob, project, other_project):
    dave = invite(alice, project.id, "dave@example.test")
    for response in (
        bob.get(f"/projects/{project.id}/invitations"),
        bob.delete(f"/projects/{project.id}/invitations/{dave.id}"),
    ):
        assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
    # Through his own project, Alice's invitation is not there.
    refused = bob.delete(f"/projects/{other_project.id}/invitations/{dave.id}")
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "INVITATION_NOT_FOUND"
    assert listed(bob, other_project.id) == []
    assert Invitation.objects.filter(pk=dave.pk).exists()


def test_a_member_cannot_withdraw(alice, carol, project):
    dave = invite(alice, project.id, "dave@example.test")
    refused = carol.delete(f"/projects/{project.id}/invitations/{dave.id}")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"
    assert Invitation.objects.filter(pk=dave.pk).exists()


def test_a_withdrawn_invitation_cannot_be_accepted(alice, project, smtp_sink, committed):
    dave = committed(lambda: invite(alice, project.id, "dave@example.test", "ADMIN"))
    token = token_of(smtp_sink.received[0])
    assert alice.delete(f"/projects/{project.id}/invitations/{dave.id}").status_code == 204
    assert listed(alice, project.id) == []
    again = alice.delete(f"/projects/{project.id}/invitations/{dave.id}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "INVITATION_NOT_FOUND"
    assert alice.delete(f"/projects/{project.id}/invitations/not-an-id").status_code == 404

    # Signing up with the link's token: refused, and no account is left behind.
    body = {"email": "dave@example.test", "password": "a long passphrase!", "token": token}
    refused = browser_client().post("/auth/signup", body)
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "code": "INVALID_TOKEN",
        "message": EXPIRED,
        "statusCode": 400,
        "requestId": refused.json()["error"]["requestId"],
    }
    assert not User.objects.filter(email="dave@example.test").exists()
    # Accepting it logged in: refused too.
    user_get_or_create(email="dave@example.test", password=PASSWORD)
    dave_session = session_client("dave@example.test")
    accepted = dave_session.post("/auth/accept-invitation", {"token": token}, format="json")
    assert accepted.status_code == 400 and accepted.json()["error"]["message"] == EXPIRED
    assert not Membership.objects.filter(project=project.project, user__email="dave@example.test").exists()


def test_withdrawing_in_the_admin_and_sending_again(admin_client, alice, project, smtp_sink, committed):
    erin = committed(lambda: invite(alice, project.id, "erin@example.test"))
    Invitation.objects.filter(pk=erin.pk).update(sent_at=timezone.now() - timedelta(days=8))
    url = "/admin/accounts/invitation/"
    committed(lambda: admin_client.post(url, {"action": "resend", "_selected_action": [erin.pk]}))
    [row] = listed(alice, project.id)
    assert parse_datetime(row["expiresAt"]) > timezone.now() + timedelta(days=6)

    token = token_of(smtp_sink.received[-1])
    admin_client.post(url, {"action": "withdraw", "_selected_action": [erin.pk]})
    assert not Invitation.objects.exists() and listed(alice, project.id) == []
    refused = browser_client().post(
        "/auth/signup", {"email": "erin@example.test", "password": "a long passphrase!", "token": token}
    )
    assert refused.status_code == 400 and refused.json()["error"]["message"] == EXPIRED
