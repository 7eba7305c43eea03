"""The limits on the service's own mail that anyone can ask for: per recipient address and kind, per address a day,
invitations per project a day; and subjects that carry nothing a user wrote. Through the API, with the mail read
from a real SMTP server on loopback and the counts in Redis, as several web processes share them."""

import time

import pytest

from accounts.models import Invitation, User
from conftest import browser_client, session_client

pytestmark = pytest.mark.django_db

PASSPHRASE = "a long and unusual passphrase"


@pytest.fixture(autouse=True)
def shared_cache(redis_cache):
    return redis_cache


def _sign_up(committed, smtp_sink) -> None:
    """An account that has not verified its address, signed up (one verification email sent)."""
    client = browser_client()
    committed(lambda: client.post("/auth/signup", {"email": "victim@example.test", "password": PASSPHRASE}))
    assert len(smtp_sink.received) == 1


def _ask(committed, path: str, email: str = "victim@example.test"):
    answer = committed(lambda: browser_client().post(path, {"email": email}))
    assert answer.status_code == 200 and answer.json() == {"success": True}, answer.content
    return answer


def _kinds(smtp_sink) -> list[str]:
    return [
        "verify" if "/verify-email" in m.text else "reset" if "/reset-password" in m.text else "invite"
        for m in smtp_sink.received
    ]


def test_a_second_email_of_a_kind_within_the_cooldown_is_not_sent_and_the_answer_is_the_same(
    committed, smtp_sink, settings
):
    settings.ACCOUNT_EMAIL_COOLDOWN_SECONDS = 6
    started = time.monotonic()
    _sign_up(committed, smtp_sink)
    signed_up = time.monotonic()
    for _ in range(3):
        _ask(committed, "/auth/request-verification")
        _ask(committed, "/auth/request-password-reset")
    assert time.monotonic() - started < 6, "too slow a machine for this cooldown"
    # The sign-up's verification is within the cooldown: the requests add one reset, nothing more.
    assert _kinds(smtp_sink) == ["verify", "reset"]
    time.sleep(6.2 - (time.monotonic() - signed_up))
    _ask(committed, "/auth/request-verification")
    assert _kinds(smtp_sink) == ["verify", "reset", "verify"]


def test_an_address_gets_at_most_the_daily_cap_in_all(committed, smtp_sink, settings):
    settings.ACCOUNT_EMAIL_COOLDOWN_SECONDS = 0
    settings.ACCOUNT_EMAIL_DAILY_LIMIT = 4
    _sign_up(committed, smtp_sink)
    for _ in range(6):
        _ask(committed, "/auth/request-verification")
        _ask(committed, "/auth/request-password-reset")
    assert len(smtp_sink.received) == 4
    _ask(committed, "/auth/request-password-reset", email="someone.else@example.test")  # no account: nothing
    assert len(smtp_sink.received) == 4


def test_an_invitation_followed_at_once_by_the_sign_up_still_gets_its_verification(project, committed, smtp_sink):
    alice = session_client(project.owner_email, project.id)
    invited = committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test"}))
    assert invited.status_code == 201
    dave = browser_client()
    committed(lambda: dave.post("/auth/signup", {"email": "dave@example.test", "password": PASSPHRASE}))
    assert _kinds(smtp_sink) == ["invite", "verify"]
    assert {tuple(m.rcpt_tos) for m in smtp_sink.received} == {("dave@example.test",)}


def test_invitations_past_the_project_daily_limit_are_429_and_leave_nothing(
    project, other_project, committed, smtp_sink, settings
):
    settings.INVITATION_DAILY_LIMIT_PER_PROJECT = 2
    alice = session_client(project.owner_email, project.id)
    for name in ("a", "b"):
        answer = committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": f"{name}@example.test"}))
        assert answer.status_code == 201
    refused = committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "c@example.test"}))
    assert refused.status_code == 429, refused.content
    error = refused.json()["error"]
    assert error["code"] == "RATE_LIMIT_EXCEEDED" and refused.json()["success"] is False
    assert not Invitation.objects.filter(email="c@example.test").exists()
    assert len(smtp_sink.received) == 2
    # Another project's budget is its own.
    bob = session_client(other_project.owner_email, other_project.id)
    answer = committed(lambda: bob.post(f"/projects/{other_project.id}/members", {"email": "c@example.test"}))
    assert answer.status_code == 201 and smtp_sink.received[-1].rcpt_tos == ["c@example.test"]


def test_one_address_invited_by_two_projects_within_the_cooldown_is_429(project, other_project, committed, smtp_sink):
    alice = session_client(project.owner_email, project.id)
    bob = session_client(other_project.owner_email, other_project.id)
    first = committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "dave@example.test"}))
    assert first.status_code == 201
    second = committed(lambda: bob.post(f"/projects/{other_project.id}/members", {"email": "dave@example.test"}))
    assert second.status_code == 429 and second.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert list(Invitation.objects.values_list("project_id", flat=True)) == [project.project.id]
    assert len(smtp_sink.received) == 1


def test_sign_up_past_the_limit_makes_the_account_without_mail(project, committed, smtp_sink, settings):
    settings.ACCOUNT_EMAIL_DAILY_LIMIT = 1
    alice = session_client(project.owner_email, project.id)
    committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": "new@example.test"}))
    client = browser_client()
    answer = committed(lambda: client.post("/auth/signup", {"email": "new@example.test", "password": PASSPHRASE}))
    assert answer.status_code == 201 and User.objects.filter(email="new@example.test").exists()
    assert _kinds(smtp_sink) == ["invite"]


def test_the_invitation_subject_carries_nothing_a_user_wrote(committed, smtp_sink):
    owner = browser_client()
    committed(lambda: owner.post("/auth/signup", {"email": "mallory@example.test", "password": PASSPHRASE}))
    csrf = {"HTTP_X_CSRFTOKEN": owner.cookies["csrftoken"].value}
    name = "Your account is suspended: log in at evil.example"
    created = owner.post("/users/@me/projects", {"name": name}, format="json", **csrf)
    project_id = created.json()["data"]["id"]
    committed(lambda: owner.post(f"/projects/{project_id}/members", {"email": "target@example.test"}, **csrf))
    invitation = smtp_sink.received[-1]
    assert invitation.rcpt_tos == ["target@example.test"]
    assert invitation.message["Subject"] == "You are invited to join a project"
    assert f'the project "{name}"' in invitation.text and "evil.example" in invitation.html
