"""The pages behind the account emails' links (`/verify-email`, `/reset-password`, `/signup`), driven over HTTP as a
browser without JavaScript drives them: the link from the received email, then the form with the CSRF token the page
carries (Django's CSRF check enforced). They call the API's services, so its rules, lockout and limits hold here too."""

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from accounts.identity.users import user_get_or_create
from accounts.models import Invitation, Membership, Project, User
from conftest import PASSWORD, browser_client, session_client

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a long and unusual passphrase"


def page_client() -> Client:
    return Client(enforce_csrf_checks=True)


def text(response) -> str:
    """What the page's body says, markup and spacing aside."""
    body = response.content.decode().partition("<body>")[2]
    inline = re.sub(r"</?(strong|a)\b[^>]*>", "", body)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", inline))).strip()


def link(message, path: str) -> str:
    """The path and query of the link to `path` in a received email."""
    url = next(url for url in re.findall(r"https?://\S+", message.text) if urlsplit(url).path == path)
    return url.split("://", 1)[1].partition("/")[1] + url.split("://", 1)[1].partition("/")[2]


def submit(client: Client, url: str, data: dict | None = None, *, page=None):
    """Post the form of the page at `url` (`page`: as already fetched) with its CSRF token, as a browser does."""
    page = page or client.get(url)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    return client.post(url, {"csrfmiddlewaretoken": token, **(data or {})})


def mail_to(smtp_sink, address: str, path: str):
    return [m for m in smtp_sink.received if m.rcpt_tos == [address] and f"{path}?" in m.text][-1]


def signed_up(committed, email: str):
    """An account made through the API, its verification email sent."""
    response = committed(lambda: browser_client().post("/auth/signup", {"email": email, "password": PASSWORD}))
    assert response.status_code == 201, response.content
    return User.objects.get(email=email)


@pytest.fixture
def alice(project):
    return session_client(project.owner_email)


def invited(alice, project, committed, email: str, role: str = "MEMBER") -> Invitation:
    response = committed(lambda: alice.post(f"/projects/{project.id}/members", {"email": email, "role": role}))
    assert response.status_code == 201 and response.json()["data"]["status"] == "invited", response.content
    return Invitation.objects.get(project=project.project, email=email)


def member_role(project, email: str) -> str | None:
    found = Membership.objects.filter(project=project.project, user__email=email).first()
    return found.role if found else None


# /verify-email ------------------------------------------------------------------------------------------------


def test_verifying_an_address(smtp_sink, committed):
    user = signed_up(committed, "dave@example.test")
    url = link(mail_to(smtp_sink, "dave@example.test", "/verify-email"), "/verify-email")
    browser = page_client()

    for _ in range(2):  # a mail scanner first, then the person
        page = browser.get(url)
        assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
        assert "Confirm that dave@example.test is your email address." in text(page)
        assert "no-cache" in page["Cache-Control"]
    user.refresh_from_db()
    assert user.email_verified_at is None, "opening the link changes nothing"

    done = submit(browser, url, page=page)
    assert done.status_code == 200
    assert "Your address is verified" in text(done) and "dave@example.test is verified" in text(done)
    user.refresh_from_db()
    assert user.email_verified_at is not None

    for used in (browser.get(url), submit(browser, url, page=page)):
        assert used.status_code == 400
        assert "Link not valid" in text(used) and "This link is invalid or has expired." in text(used)


def test_a_form_without_its_csrf_token_or_from_another_site_is_refused_with_a_page(smtp_sink, committed):
    user = signed_up(committed, "dave@example.test")
    url = link(mail_to(smtp_sink, "dave@example.test", "/verify-email"), "/verify-email")
    refused = page_client().post(url)
    assert refused.status_code == 403 and refused["Content-Type"].startswith("text/html")
    assert "Please try again" in text(refused) and "cookie" in text(refused)
    # With the token, but posted from another site's page.
    browser = page_client()
    page = browser.get(url)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    forged = browser.post(url, {"csrfmiddlewaretoken": token}, HTTP_ORIGIN="https://elsewhere.example")
    assert forged.status_code == 403 and "Please try again" in text(forged)
    user.refresh_from_db()
    assert user.email_verified_at is None


def test_a_link_that_is_not_ours(db):
    for url in ("/verify-email?token=forged", "/verify-email", "/reset-password?token=x.y", "/signup?token=forged"):
        page = page_client().get(url)
        assert page.status_code == 400 and "Link not valid" in text(page), url
        assert "<form" not in page.content.decode()


def test_a_wrong_method_answers_the_405_envelope(db):
    response = page_client().put("/verify-email?token=x")
    assert response.status_code == 405 and response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


# /reset-password ----------------------------------------------------------------------------------------------


def test_resetting_a_password(project, smtp_sink, committed):
    old_session = session_client(project.owner_email)
    committed(lambda: browser_client().post("/auth/request-password-reset", {"email": project.owner_email}))
    url = link(mail_to(smtp_sink, project.owner_email, "/reset-password"), "/reset-password")
    browser = page_client()

    page = browser.get(url)
    assert page.status_code == 200 and f"For {project.owner_email}." in text(page)
    assert "Your password must contain at least 8 characters." in text(page)  # the validators' own rules
    assert "Choose a new password" in text(page)

    differ = submit(browser, url, {"password": NEW_PASSWORD, "password2": NEW_PASSWORD + "!"}, page=page)
    assert differ.status_code == 422 and "The two passwords are not the same" in text(differ)
    assert 'aria-invalid="true"' in differ.content.decode() and NEW_PASSWORD not in differ.content.decode()
    common = submit(browser, url, {"password": "password", "password2": "password"}, page=page)
    token = parse_qs(urlsplit(url).query)["token"][0]
    api = browser_client().post("/auth/reset-password", {"token": token, "password": "password"}).json()
    assert common.status_code == 422 and "This password is too common." in text(common)
    assert api["error"]["errors"][0]["message"] == "This password is too common."  # the same rule, the same words
    assert User.objects.get(email=project.owner_email).check_password(PASSWORD)

    done = submit(browser, url, {"password": NEW_PASSWORD, "password2": NEW_PASSWORD}, page=page)
    assert done.status_code == 200 and "Your password is set" in text(done)
    assert old_session.get("/users/@me").status_code == 401, "every session open with the old password ends"
    session_client(project.owner_email, password=NEW_PASSWORD)

    again = browser.get(url)
    assert again.status_code == 400 and "Link not valid" in text(again)


# /signup without an invitation --------------------------------------------------------------------------------


def test_signing_up(smtp_sink, committed):
    browser = page_client()
    page = browser.get("/signup")
    assert page.status_code == 200 and "Create your account" in text(page)
    taken = submit(browser, "/signup", {"email": "carol", "password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert taken.status_code == 422 and "Enter a valid email address." in text(taken)
    assert 'value="carol"' in taken.content.decode()

    done = committed(
        lambda: submit(
            browser, "/signup", {"email": "Carol@Example.test", "password": NEW_PASSWORD, "password2": NEW_PASSWORD}
        )
    )
    assert done.status_code == 200 and "Your account is ready" in text(done)
    assert "carol@example.test" in text(done)
    assert User.objects.get(email="carol@example.test").check_password(NEW_PASSWORD)
    assert mail_to(smtp_sink, "carol@example.test", "/verify-email")
    # Logged in, as the API's sign-up logs in.
    assert browser.get("/users/@me").json()["email"] == "carol@example.test"

    twice = submit(
        page_client(), "/signup", {"email": "carol@example.test", "password": "x" * 12, "password2": "x" * 12}
    )
    assert twice.status_code == 409 and "An account with this email already exists" in text(twice)


def test_without_sign_ups_the_page_says_they_are_by_invitation(db, settings):
    settings.SIGNUPS_DISABLED = True
    browser = page_client()
    page = browser.get("/signup")
    assert page.status_code == 403 and "Sign-up is by invitation" in text(page)
    assert "<form" not in page.content.decode()
    refused = browser.post("/signup", {"email": "carol@example.test", "password": NEW_PASSWORD})
    assert refused.status_code == 403
    assert not User.objects.filter(email="carol@example.test").exists()


# /signup?token=<invitation> -----------------------------------------------------------------------------------


def test_an_invitee_creates_the_account_and_joins(alice, project, other_project, smtp_sink, committed):
    Project.objects.filter(pk=project.id).update(name='<b>Alice</b> & "Co"')
    invited(alice, project, committed, "dave@example.test", "ADMIN")
    url = link(mail_to(smtp_sink, "dave@example.test", "/signup"), "/signup")
    browser = page_client()

    page = browser.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert "<b>Alice</b>" not in html and "&lt;b&gt;Alice&lt;/b&gt; &amp; &quot;Co&quot;" in html
    assert 'You are invited to join the project “<b>Alice</b> & "Co"”.' in text(page)
    assert "Role Admin" in text(page) and "Invited address dave@example.test" in text(page)
    assert "<title>Invitation to “&lt;b&gt;Alice&lt;/b&gt; &amp; &quot;Co&quot;”</title>" in html
    assert "Bob's shop" not in html
    assert not User.objects.filter(email="dave@example.test").exists(), "opening the link changes nothing"

    differ = submit(browser, url, {"password": NEW_PASSWORD, "password2": "something else"}, page=page)
    assert differ.status_code == 422 and not User.objects.filter(email="dave@example.test").exists()

    done = submit(browser, url, {"password": NEW_PASSWORD, "password2": NEW_PASSWORD}, page=page)
    assert done.status_code == 200
    assert 'You are a member of the project “<b>Alice</b> & "Co"” as Admin.' in text(done)
    dave = User.objects.get(email="dave@example.test")
    assert dave.email_verified_at is not None and dave.check_password(NEW_PASSWORD)
    assert member_role(project, "dave@example.test") == "ADMIN"
    assert not Membership.objects.filter(project=other_project.project, user=dave).exists()
    assert browser.get("/users/@me").json()["email"] == "dave@example.test"

    used = browser.get(url)
    assert used.status_code == 400 and "This invitation has been withdrawn or already accepted." in text(used)


@pytest.mark.parametrize("verified", [False, True], ids=["unverified", "verified"])
def test_an_invitee_with_an_account_signs_in_to_accept(alice, project, smtp_sink, committed, verified):
    invitation = invited(alice, project, committed, "dave@example.test")
    # An account of the address: one made by signing up (its address unproven), or one an operator made verified.
    dave, _ = user_get_or_create(email="dave@example.test", password=PASSWORD, verified=verified)
    url = link(mail_to(smtp_sink, "dave@example.test", "/signup"), "/signup")
    browser = page_client()

    page = browser.get(url)
    assert "dave@example.test has an account here. Sign in to it to accept." in text(page)
    assert 'autocomplete="current-password"' in page.content.decode()
    wrong = submit(browser, url, {"password": "not the password"}, page=page)
    assert wrong.status_code == 401 and "Invalid email or password" in text(wrong)
    assert member_role(project, "dave@example.test") is None

    done = submit(browser, url, {"password": PASSWORD}, page=page)
    assert done.status_code == 200 and "You are a member of the project “Alice's shop” as Member." in text(done)
    assert member_role(project, "dave@example.test") == "MEMBER"
    assert not Invitation.objects.filter(pk=invitation.pk).exists()
    dave.refresh_from_db()
    assert dave.email_verified_at is not None
    assert browser.get("/users/@me").json()["email"] == "dave@example.test"


def test_an_invitee_with_an_account_may_ask_for_a_password_reset(alice, project, smtp_sink, committed):
    signed_up(committed, "dave@example.test")
    invited(alice, project, committed, "dave@example.test", "ADMIN")
    url = link(mail_to(smtp_sink, "dave@example.test", "/signup"), "/signup")
    browser = page_client()
    asked = committed(lambda: submit(browser, url, {"action": "reset"}))
    assert asked.status_code == 200 and "Check your inbox" in text(asked)
    reset_url = link(mail_to(smtp_sink, "dave@example.test", "/reset-password"), "/reset-password")

    # The reset proves the address, which joins the project that invited it.
    submit(browser, reset_url, {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert member_role(project, "dave@example.test") == "ADMIN"


def test_the_login_lockout_of_the_api_holds_on_the_page(alice, project, smtp_sink, committed, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    invited(alice, project, committed, "dave@example.test")
    user_get_or_create(email="dave@example.test", password=PASSWORD)
    for _ in range(2):
        failed = browser_client().post("/auth/login", {"email": "dave@example.test", "password": "guess"})
        assert failed.status_code == 401
    url = link(mail_to(smtp_sink, "dave@example.test", "/signup"), "/signup")

    locked = submit(page_client(), url, {"password": PASSWORD})
    assert locked.status_code == 429 and locked["Retry-After"] == str(settings.LOGIN_FAILURE_WINDOW_SECONDS)
    assert "Too many failed logins for this address." in text(locked)
    assert member_role(project, "dave@example.test") is None


def test_a_withdrawn_invitation_is_not_accepted_on_the_page(alice, project, smtp_sink, committed):
    invitation = invited(alice, project, committed, "dave@example.test")
    url = link(mail_to(smtp_sink, "dave@example.test", "/signup"), "/signup")
    browser = page_client()
    page = browser.get(url)
    assert alice.delete(f"/projects/{project.id}/invitations/{invitation.id}").status_code == 204

    for refused in (
        browser.get(url),
        submit(browser, url, {"password": NEW_PASSWORD, "password2": NEW_PASSWORD}, page=page),
    ):
        assert refused.status_code == 400
        assert "This invitation has been withdrawn or already accepted." in text(refused)
    assert not User.objects.filter(email="dave@example.test").exists()


def test_without_sign_ups_an_invitee_still_creates_the_account(alice, project, smtp_sink, committed, settings):
    settings.SIGNUPS_DISABLED = True
    invited(alice, project, committed, "dave@example.test")
    url = link(mail_to(smtp_sink, "dave@example.test", "/signup"), "/signup")
    token = parse_qs(urlsplit(url).query)["token"][0]
    # Not with another address: an invitation opens an account for its own address only.
    other = browser_client().post(
        "/auth/signup", {"email": "eve@example.test", "password": NEW_PASSWORD, "token": token}
    )
    assert other.status_code == 403 and other.json()["error"]["code"] == "SIGNUPS_DISABLED"

    done = submit(page_client(), url, {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert done.status_code == 200 and member_role(project, "dave@example.test") == "MEMBER"
    assert not User.objects.filter(email="eve@example.test").exists()


# Where the links go, and the rate limit ------------------------------------------------------------------------


def test_with_a_dashboard_elsewhere_the_links_go_there_and_the_pages_still_answer(smtp_sink, committed, settings):
    settings.DASHBOARD_URL = "https://app.example.test"
    signed_up(committed, "dave@example.test")
    message = mail_to(smtp_sink, "dave@example.test", "/verify-email")
    assert "https://app.example.test/verify-email?token=" in message.text
    url = link(message, "/verify-email")
    browser = page_client()
    done = submit(browser, url)
    assert done.status_code == 200 and "Your address is verified" in text(done)
    assert '<a href="https://app.example.test">Go to the dashboard</a>' in done.content.decode()


def test_the_pages_count_in_the_apis_rate_limit_of_the_address(db, settings, one_rate_window):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    browser = page_client()
    assert [browser.get("/signup").status_code for _ in range(3)] == [200, 200, 200]
    refused = browser.get("/signup")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many requests from your network." in text(refused)
    # The API's budget of the same address is the same one.
    api = browser_client().post("/auth/login", {"email": "x@example.test", "password": "x"})
    assert api.status_code == 429
