"""Sign-in with GitHub and Google, through the real OAuth client and real HTTP against a stand-in provider on
loopback (accounts/tests/oauth_provider.py): start, the provider's redirect back, the callback and its errors."""

import socket
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.utils import timezone

from accounts.identity.users import user_get_or_create
from accounts.models import Invitation, Membership, User
from accounts.tenancy.members import member_add
from accounts.tests import oauth_provider
from conftest import PASSWORD, browser_client, session_client

pytestmark = pytest.mark.django_db

DASHBOARD = "https://app.example.test"
PROVIDERS = ["github", "google"]


@pytest.fixture
def fake(settings):
    provider, server = oauth_provider.start()
    provider.settings(settings)
    settings.API_URL = "http://testserver"
    settings.DASHBOARD_URL = DASHBOARD
    yield provider
    server.shutdown()
    server.server_close()


@contextmanager
def socket_closed():
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield port


def start(browser, name: str) -> str:
    """The browser follows the dashboard's sign-in link, and the provider sends it back: the callback's path."""
    outbound = browser.get(f"/oauth/{name}/outbound")
    assert outbound.status_code == 302, outbound.content
    at_provider = requests.get(outbound["Location"], allow_redirects=False, timeout=5)
    assert at_provider.status_code == 302
    back = urlsplit(at_provider.headers["Location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == f"http://testserver/oauth/{name}/callback"
    return f"{back.path}?{back.query}"


def sign_in(browser, name: str):
    return browser.get(start(browser, name))


def login_error(response) -> str:
    assert response.status_code == 302, response.content
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{DASHBOARD}/auth/login"
    query = parse_qs(location.query)
    assert query["message"][0]
    return query["error"][0]


def logged_in_as(browser) -> str | None:
    response = browser.get("/users/@me")
    return response.json()["email"] if response.status_code == 200 else None


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_new_address_gets_an_account_and_lands_on_the_dashboard_logged_in(fake, name):
    browser = browser_client()
    response = sign_in(browser, name)
    assert response.status_code == 302 and response["Location"] == DASHBOARD
    assert response.cookies["sessionid"]["httponly"] and "csrftoken" in response.cookies
    assert logged_in_as(browser) == "ada@example.test"
    user = User.objects.get(email="ada@example.test")
    assert user.email_verified_at is not None and not user.has_usable_password()
    # The provider was asked with state and a PKCE challenge, and given the verifier and the client's redirect URI.
    authorize = next(params for method, path, params in fake.requests if path.endswith("/authorize"))
    assert authorize["code_challenge_method"] == "S256" and authorize["state"] and authorize["client_id"]
    assert authorize["scope"] == {"github": "user:email", "google": "openid email"}[name]


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_verified_address_signs_in_to_its_existing_account_with_any_case(fake, name):
    user, _ = user_get_or_create(email="ada@example.test", password=PASSWORD)
    User.objects.filter(pk=user.pk).update(email_verified_at=timezone.now())
    fake.emails = [{"email": "Ada@Example.test", "primary": True, "verified": True}]
    browser = browser_client()
    assert sign_in(browser, name)["Location"] == DASHBOARD
    assert logged_in_as(browser) == "ada@example.test" and User.objects.count() == 1
    # The password still works: the account had proved its address before.
    session_client("ada@example.test")


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("existing", [True, False])
def test_an_address_the_provider_has_not_verified_neither_takes_over_nor_creates_an_account(fake, name, existing):
    if existing:
        user, _ = user_get_or_create(email="ada@example.test", password=PASSWORD)
        User.objects.filter(pk=user.pk).update(email_verified_at=timezone.now())
    fake.emails = [{"email": "ada@example.test", "primary": True, "verified": False}]
    browser = browser_client()
    assert login_error(sign_in(browser, name)) == "OAUTH_EMAIL_UNVERIFIED"
    assert logged_in_as(browser) is None
    assert User.objects.count() == (1 if existing else 0)
    if existing:
        session_client("ada@example.test")  # the account and its password are untouched


def test_github_takes_the_primary_address_not_another_verified_one(fake):
    fake.emails = [
        {"email": "other@example.test", "primary": False, "verified": True},
        {"email": "ada@example.test", "primary": True, "verified": False},
    ]
    assert login_error(sign_in(browser_client(), "github")) == "OAUTH_EMAIL_UNVERIFIED"
    assert not User.objects.exists()


def test_an_unverified_account_loses_the_password_someone_else_may_have_set(fake):
    """Someone signs up with Ada's address before she does (they cannot verify it): when Ada signs in through a
    provider that vouches for the address, the squatter's password and sessions stop working."""
    squatter = browser_client()
    signed_up = squatter.post("/auth/signup", {"email": "ada@example.test", "password": "a squatter's passphrase"})
    assert signed_up.status_code == 201 and logged_in_as(squatter) == "ada@example.test"
    ada = browser_client()
    assert sign_in(ada, "google")["Location"] == DASHBOARD
    assert logged_in_as(ada) == "ada@example.test"
    assert logged_in_as(squatter) is None
    again = browser_client().post("/auth/login", {"email": "ada@example.test", "password": "a squatter's passphrase"})
    assert again.status_code == 401
    user = User.objects.get()
    assert user.email_verified_at is not None and not user.has_usable_password()


def test_an_invited_address_joins_its_project_on_signing_in(fake, project):
    owner = Membership.objects.get(project=project.project, role=Membership.Role.OWNER)
    member_add(actor=owner, email="ada@example.test", role=Membership.Role.ADMIN)
    browser = browser_client()
    sign_in(browser, "github")
    assert Membership.objects.get(user__email="ada@example.test").role == Membership.Role.ADMIN
    assert not Invitation.objects.exists()
    projects = browser.get("/users/@me/projects").json()["data"]
    assert [(row["id"], row["role"]) for row in projects] == [(str(project.id), "ADMIN")]


@pytest.mark.parametrize("name", PROVIDERS)
def test_declining_at_the_provider_logs_nobody_in(fake, name):
    fake.denies = True
    browser = browser_client()
    assert login_error(sign_in(browser, name)) == "OAUTH_DENIED"
    assert logged_in_as(browser) is None and not User.objects.exists()


def test_a_callback_is_refused_without_its_state(fake):
    browser = browser_client()
    callback = start(browser, "github")
    path, _, query = callback.partition("?")
    params = parse_qs(query)
    forged = f"{path}?code={params['code'][0]}&state=forged"
    assert login_error(browser.get(forged)) == "OAUTH_STATE_INVALID"
    # The state was spent on the refused attempt: the genuine callback is no longer good either.
    assert login_error(browser.get(callback)) == "OAUTH_STATE_INVALID"
    assert logged_in_as(browser) is None and not User.objects.exists()


def test_a_callback_works_once_and_only_in_the_browser_that_started_it(fake):
    browser = browser_client()
    callback = start(browser, "github")
    # Another browser (an attacker's link, say): it never started a sign-in, so it has no state.
    assert login_error(browser_client().get(callback)) == "OAUTH_STATE_INVALID"
    assert browser.get(callback)["Location"] == DASHBOARD
    browser.get("/auth/logout")
    assert login_error(browser.get(callback)) == "OAUTH_STATE_INVALID"
    assert logged_in_as(browser) is None


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_provider_that_fails_after_the_redirect_is_a_clear_error(fake, name):
    browser = browser_client()
    callback = start(browser, name)
    fake.failing = True
    assert login_error(browser.get(callback)) == "OAUTH_PROVIDER_ERROR"
    assert logged_in_as(browser) is None and not User.objects.exists()


def test_a_provider_that_cannot_be_reached_is_a_clear_error(fake, settings):
    browser = browser_client()
    callback = start(browser, "google")
    with socket_closed() as port:
        settings.GOOGLE_TOKEN_URL = f"http://127.0.0.1:{port}/token"
        assert login_error(browser.get(callback)) == "OAUTH_PROVIDER_ERROR"


@pytest.mark.parametrize("answer", [{"emails": "none"}, [], [{"primary": True}], ["ada@example.test"]])
def test_a_provider_answer_of_another_shape_is_a_clear_error(fake, answer):
    fake.emails = answer
    browser = browser_client()
    assert login_error(sign_in(browser, "github")) == "OAUTH_PROVIDER_ERROR"
    assert not User.objects.exists()


def test_a_refused_code_exchange_is_a_clear_error(fake):
    browser = browser_client()
    callback = start(browser, "github")
    fake.codes.clear()  # the provider no longer knows the code (expired)
    assert login_error(browser.get(callback)) == "OAUTH_PROVIDER_ERROR"


def test_sign_ups_disabled_refuse_new_addresses_only(fake, settings):
    settings.SIGNUPS_DISABLED = True
    assert login_error(sign_in(browser_client(), "github")) == "SIGNUPS_DISABLED"
    assert not User.objects.exists()
    user, _ = user_get_or_create(email="ada@example.test")
    User.objects.filter(pk=user.pk).update(email_verified_at=timezone.now())
    assert sign_in(browser_client(), "github")["Location"] == DASHBOARD


def test_a_deactivated_account_is_not_signed_in(fake):
    user, _ = user_get_or_create(email="ada@example.test")
    User.objects.filter(pk=user.pk).update(is_active=False, email_verified_at=timezone.now())
    browser = browser_client()
    assert login_error(sign_in(browser, "google")) == "INVALID_CREDENTIALS"
    assert logged_in_as(browser) is None


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_provider_without_client_credentials_is_not_offered(settings, name):
    settings.GITHUB_CLIENT_ID = settings.GOOGLE_CLIENT_ID = "client-id"
    settings.GITHUB_CLIENT_SECRET = settings.GOOGLE_CLIENT_SECRET = ""
    settings.DASHBOARD_URL = DASHBOARD
    browser = browser_client()
    assert browser.get("/auth/oauth-config").json() == {"github": {"enabled": False}, "google": {"enabled": False}}
    outbound = browser.get(f"/oauth/{name}/outbound")
    assert outbound.status_code == 404 and outbound.json()["error"]["code"] == "FEATURE_DISABLED"
    assert login_error(browser.get(f"/oauth/{name}/callback?code=x&state=y")) == "FEATURE_DISABLED"
    assert logged_in_as(browser) is None


def test_an_unknown_provider_is_an_unknown_route(fake):
    response = browser_client().get("/oauth/gitlab/outbound")
    assert response.status_code == 404 and response.json()["success"] is False
