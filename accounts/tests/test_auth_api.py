"""Sign-up, login, logout, verification and password resets through the API, with the mail read from a real SMTP
server on loopback."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.sessions.models import Session
from rest_framework.test import APIClient

from accounts.models import User
from conftest import PASSWORD, browser_client, session_client

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "a long and unusual passphrase"


@pytest.fixture
def browser() -> APIClient:
    return browser_client()


def link_token(message, path: str) -> str:
    links = re.findall(r"https?://\S+", message.text)
    link = next(link for link in links if urlsplit(link).path == path)
    return parse_qs(urlsplit(link).query)["token"][0]


def signup(client, email="new@example.test", password=GOOD_PASSWORD, **extra):
    return client.post("/auth/signup", {"email": email, "password": password, **extra}, format="json")


def test_signup_creates_the_user_logs_in_and_mails_a_verification_link(browser, smtp_sink, committed, settings):
    settings.DASHBOARD_URL = "https://app.example.test"  # the links open the dashboard's pages
    response = committed(lambda: signup(browser, email=" New@Example.test "))
    assert response.status_code == 201, response.content
    user = response.json()["data"]["user"]
    assert user["email"] == "new@example.test" and user["emailVerified"] is False
    assert set(user) == {"id", "email", "emailVerified", "createdAt"}
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert "csrftoken" in response.cookies
    assert browser.get("/users/@me").json()["email"] == "new@example.test"

    [message] = smtp_sink.received
    assert message.rcpt_tos == ["new@example.test"]
    assert message.message["From"] == settings.SYSTEM_EMAIL_FROM
    assert "https://app.example.test/verify-email?token=" in message.html
    token = link_token(message, "/verify-email")

    verified = browser.post("/auth/verify-email", {"token": token}, format="json")
    assert verified.status_code == 200 and verified.json()["data"]["user"]["emailVerified"] is True
    again = browser.post("/auth/verify-email", {"token": token}, format="json")
    assert again.status_code == 400 and again.json()["error"]["code"] == "INVALID_TOKEN"


def test_a_verification_token_survives_logins_until_used(browser, smtp_sink, committed):
    committed(lambda: signup(browser))
    token = link_token(smtp_sink.received[0], "/verify-email")
    browser.get("/auth/logout")
    session_client("new@example.test", password=GOOD_PASSWORD)
    assert browser.post("/auth/verify-email", {"token": token}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"email": "not-an-email", "password": GOOD_PASSWORD}, 422, "email"),
        ({"email": "weak@example.test", "password": "password"}, 422, "password"),
        ({"email": "short@example.test", "password": "x1"}, 422, "password"),
        ({"email": "alice@example.test", "password": GOOD_PASSWORD}, 409, None),
        ({"email": 5, "password": GOOD_PASSWORD}, 422, "email"),
        ({"password": GOOD_PASSWORD}, 422, "email"),
    ],
)
def test_bad_signups_are_refused_and_create_nothing(browser, project, body, status, field):
    users_before = User.objects.count()
    response = browser.post("/auth/signup", body, format="json")
    assert response.status_code == status, response.content
    if field:
        assert [error["field"] for error in response.json()["error"]["errors"]] == [field] * len(
            response.json()["error"]["errors"]
        )
    else:
        assert response.json()["error"]["code"] == "CONFLICT"
    assert User.objects.count() == users_before and "sessionid" not in response.cookies


def test_signups_can_be_disabled(browser, settings):
    settings.SIGNUPS_DISABLED = True
    response = signup(browser)
    assert response.status_code == 403 and response.json()["error"]["code"] == "SIGNUPS_DISABLED"
    assert not User.objects.exists()


def test_login_sets_the_session_and_csrf_cookies(browser, project):
    response = browser.post("/auth/login", {"email": "ALICE@example.test", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["user"]["email"] == "alice@example.test"
    assert response.cookies["sessionid"]["httponly"] and response.cookies["sessionid"]["samesite"] == "Lax"
    assert response.cookies["csrftoken"].value


def test_wrong_password_and_unknown_email_are_the_same_401(browser, project):
    answers = [
        browser.post("/auth/login", {"email": email, "password": "wrong password"}, format="json")
        for email in ("alice@example.test", "nobody@example.test")
    ]
    assert {a.status_code for a in answers} == {401}
    assert {a.json()["error"]["code"] for a in answers} == {"INVALID_CREDENTIALS"}
    assert len({a.json()["error"]["message"] for a in answers}) == 1
    assert all("sessionid" not in a.cookies for a in answers)


class CountingHasher(MD5PasswordHasher):
    """A real hasher that counts its hashing, the work that takes a login its time."""

    algorithm = "counting_md5"
    calls = 0

    def encode(self, password, salt):
        CountingHasher.calls += 1
        return super().encode(password, salt)


def test_unknown_email_runs_the_hasher_as_a_wrong_password_does(browser, project, settings):
    settings.PASSWORD_HASHERS = ["accounts.tests.test_auth_api.CountingHasher"]
    alice = User.objects.get(email="alice@example.test")
    alice.set_password(PASSWORD)
    alice.save()
    work = {}
    for email in ("alice@example.test", "nobody@example.test"):
        CountingHasher.calls = 0
        browser.post("/auth/login", {"email": email, "password": "wrong"}, format="json")
        work[email] = CountingHasher.calls
    assert work["alice@example.test"] == work["nobody@example.test"] == 1


def test_ten_failures_lock_the_address_only(browser, project, other_project, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        response = browser.post("/auth/login", {"email": "alice@example.test", "password": "wrong"}, format="json")
        assert response.status_code == 401
    locked = browser.post("/auth/login", {"email": "Alice@example.test", "password": PASSWORD}, format="json")
    assert locked.status_code == 429 and locked.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert "sessionid" not in locked.cookies and int(locked["Retry-After"]) > 0
    other = browser.post("/auth/login", {"email": "bob@example.test", "password": PASSWORD}, format="json")
    assert other.status_code == 200


def test_logout_revokes_the_session_on_the_server(project):
    client = session_client("alice@example.test", project.id)
    stolen = APIClient()
    stolen.cookies["sessionid"] = client.cookies["sessionid"].value
    assert stolen.get("/users/@me").status_code == 200
    assert client.get("/auth/logout").json() == {"success": True}
    assert stolen.get("/users/@me").status_code == 401
    assert client.get("/users/@me").status_code == 401


def test_post_logout_too(project):
    client = session_client("alice@example.test", project.id)
    assert client.post("/auth/logout").status_code == 200
    assert client.get("/contacts").status_code == 401


def test_password_reset_by_mail_ends_every_session(browser, project, smtp_sink, committed):
    elsewhere = session_client("alice@example.test", project.id)
    answer = committed(
        lambda: browser.post("/auth/request-password-reset", {"email": "alice@example.test"}, format="json")
    )
    assert answer.json() == {"success": True}
    token = link_token(smtp_sink.received[0], "/reset-password")

    weak = browser.post("/auth/reset-password", {"token": token, "password": "123"}, format="json")
    assert weak.status_code == 422 and weak.json()["error"]["errors"][0]["field"] == "password"
    done = browser.post("/auth/reset-password", {"token": token, "password": GOOD_PASSWORD}, format="json")
    assert done.status_code == 200
    assert elsewhere.get("/contacts").status_code == 401
    reused = browser.post(
        "/auth/reset-password", {"token": token, "password": "another fine passphrase"}, format="json"
    )
    assert reused.status_code == 400 and reused.json()["error"]["code"] == "INVALID_TOKEN"
    assert session_client("alice@example.test", password=GOOD_PASSWORD).get("/users/@me").status_code == 200


@pytest.mark.parametrize("path", ["/auth/request-password-reset", "/auth/request-verification"])
def test_requests_for_unknown_addresses_look_the_same(browser, smtp_sink, committed, path):
    response = committed(lambda: browser.post(path, {"email": "nobody@example.test"}, format="json"))
    assert response.status_code == 200 and response.json() == {"success": True}
    assert smtp_sink.received == []


@pytest.mark.parametrize(
    "token",
    ["", "garbage", "AAAA.bogus-token", "eyJ1IjoiMSJ9:1abc:def"],
)
@pytest.mark.parametrize("path", ["/auth/verify-email", "/auth/reset-password"])
def test_altered_tokens_are_invalid(browser, project, path, token):
    response = browser.post(path, {"token": token, "password": GOOD_PASSWORD}, format="json")
    if token == "":
        assert response.status_code == 422
    else:
        assert response.status_code == 400 and response.json()["error"]["code"] == "INVALID_TOKEN"


def test_expired_tokens_are_invalid(browser, project, smtp_sink, committed, settings):
    committed(lambda: browser.post("/auth/request-password-reset", {"email": "alice@example.test"}, format="json"))
    committed(lambda: signup(browser))
    reset, verify = (link_token(smtp_sink.received[i], p) for i, p in ((0, "/reset-password"), (1, "/verify-email")))
    settings.PASSWORD_RESET_TIMEOUT = settings.EMAIL_VERIFICATION_TIMEOUT = -1
    for path, token in (("/auth/reset-password", reset), ("/auth/verify-email", verify)):
        response = browser.post(path, {"token": token, "password": GOOD_PASSWORD}, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == "INVALID_TOKEN"


def test_oauth_config_follows_the_settings(browser, settings):
    settings.GITHUB_CLIENT_ID, settings.GITHUB_CLIENT_SECRET = "gh-client", "gh-secret"
    settings.GOOGLE_CLIENT_ID, settings.GOOGLE_CLIENT_SECRET = "", "google-secret"
    assert browser.get("/auth/oauth-config").json() == {"github": {"enabled": True}, "google": {"enabled": False}}


def test_users_me_needs_a_session(browser):
    response = browser.get("/users/@me")
    assert response.status_code == 401 and response.json()["error"]["code"] == "MISSING_AUTH"


def test_sessions_are_stored_server_side(project):
    session_client("alice@example.test", project.id)
    assert Session.objects.count() == 1
