"""The account pages in a real browser (config/tests/browser.py): verifying an address, resetting a password, signing
up, and accepting an invitation with a new account or by signing in, each with JavaScript on and off, from the link
of the received email, asserting what the person reads and what the database then holds; and every page passes axe
and the phone checks, its screenshots going to docs/screenshots with `make screenshots`."""

import re
from dataclasses import dataclass

import pytest

from accounts.identity.invitations import invitation_withdraw
from accounts.identity.users import user_get_or_create, user_request_password_reset, user_request_verification
from accounts.models import Invitation, Membership, User
from accounts.tenancy.members import member_add
from conftest import PASSWORD

pytestmark = pytest.mark.browser

NEW_PASSWORD = "a long and unusual passphrase"
DAVE = "dave@example.test"


def link(smtp_sink, path: str) -> str:
    """The link to `path` in the latest email that has one."""
    for message in reversed(smtp_sink.received):
        for url in re.findall(r"https?://\S+", message.text):
            if url.split("?")[0].endswith(path):
                return url
    raise AssertionError(f"no email links to {path}")


def owner(persona) -> Membership:
    return Membership.objects.get(project=persona.project, role="OWNER")


def invite(persona, email: str = DAVE, role: str = "ADMIN") -> None:
    member_add(actor=owner(persona), email=email, role=role)


def member_role(persona, email: str = DAVE) -> str | None:
    found = Membership.objects.filter(project=persona.project, user__email=email).first()
    return found.role if found else None


def choose_password(browser, password: str = NEW_PASSWORD, again: str | None = None) -> None:
    browser.fill("password", password)
    browser.fill("password2", password if again is None else again)


def test_verifying_an_address(any_browser, smtp_sink):
    dave, _ = user_get_or_create(email=DAVE, password=PASSWORD)
    user_request_verification(email=DAVE)
    any_browser.open(link(smtp_sink, "/verify-email"))
    assert any_browser.title == "Verify your address"
    assert f"Confirm that {DAVE} is your email address." in any_browser.text
    dave.refresh_from_db()
    assert dave.email_verified_at is None, "opening the page changes nothing"

    any_browser.press("Verify my address")
    assert "Your address is verified" in any_browser.text
    dave.refresh_from_db()
    assert dave.email_verified_at is not None


def test_resetting_a_password(any_browser, project, smtp_sink):
    user_request_password_reset(email=project.owner_email)
    any_browser.open(link(smtp_sink, "/reset-password"))
    assert f"For {project.owner_email}." in any_browser.text

    choose_password(any_browser, again="not the same")
    any_browser.press("Set the new password")
    assert "The two passwords are not the same" in any_browser.text
    choose_password(any_browser, "password")
    any_browser.press("Set the new password")
    assert "This password is too common." in any_browser.text
    assert User.objects.get(email=project.owner_email).check_password(PASSWORD)

    choose_password(any_browser)
    any_browser.press("Set the new password")
    assert "Your password is set" in any_browser.text
    assert User.objects.get(email=project.owner_email).check_password(NEW_PASSWORD)


def test_signing_up(any_browser, smtp_sink):
    any_browser.open("/signup")
    any_browser.fill("email", "carol@example.test")
    choose_password(any_browser)
    any_browser.press("Create my account")
    assert "Your account is ready" in any_browser.text
    assert User.objects.get(email="carol@example.test").check_password(NEW_PASSWORD)
    assert link(smtp_sink, "/verify-email")


def test_an_invitee_creates_the_account_and_joins(any_browser, project, other_project, smtp_sink):
    invite(project)
    any_browser.open(link(smtp_sink, "/signup"))
    assert any_browser.title == "Invitation to “Alice's shop”"
    assert "You are invited to join the project “Alice's shop”." in any_browser.text
    assert "Bob's shop" not in any_browser.text
    assert not User.objects.filter(email=DAVE).exists(), "opening the page changes nothing"

    choose_password(any_browser)
    any_browser.press("Create my account and accept")
    assert "You are a member of the project “Alice's shop” as Admin." in any_browser.text
    assert member_role(project) == "ADMIN" and member_role(other_project) is None
    assert User.objects.get(email=DAVE).email_verified_at is not None


def test_an_invitee_with_an_account_signs_in_to_accept(any_browser, project, smtp_sink):
    invite(project, role="MEMBER")
    user_get_or_create(email=DAVE, password=PASSWORD)
    any_browser.open(link(smtp_sink, "/signup"))
    assert f"{DAVE} has an account here. Sign in to it to accept." in any_browser.text

    any_browser.fill("password", "not the password")
    any_browser.press("Sign in and accept")
    assert "Invalid email or password" in any_browser.text and member_role(project) is None

    any_browser.fill("password", PASSWORD)
    any_browser.press("Sign in and accept")
    assert "You are a member of the project “Alice's shop” as Member." in any_browser.text
    assert member_role(project) == "MEMBER"


@dataclass
class Visit:
    """Where a page check starts: the browser, and the fixtures a way to a page uses."""

    browser: object
    smtp_sink: object
    settings: object
    project: object


def _mailed(visit: Visit, ask, path: str) -> None:
    """Dave asks for a link (`ask`: the service the API calls) and opens it."""
    user_get_or_create(email=DAVE, password=PASSWORD)
    ask(email=DAVE)
    visit.browser.open(link(visit.smtp_sink, path))


def _verify_email(visit: Visit) -> None:
    _mailed(visit, user_request_verification, "/verify-email")


def _verified(visit: Visit) -> None:
    _verify_email(visit)
    visit.browser.press("Verify my address")


def _reset_password(visit: Visit) -> None:
    _mailed(visit, user_request_password_reset, "/reset-password")


def _reset_password_refused(visit: Visit) -> None:
    _reset_password(visit)
    choose_password(visit.browser, again="not the same")
    visit.browser.press("Set the new password")


def _invitation(visit: Visit, *, account: bool = False) -> None:
    invite(visit.project)
    if account:
        user_get_or_create(email=DAVE, password=PASSWORD)
    visit.browser.open(link(visit.smtp_sink, "/signup"))


def _joined(visit: Visit) -> None:
    _invitation(visit)
    choose_password(visit.browser)
    visit.browser.press("Create my account and accept")


def _withdrawn(visit: Visit) -> None:
    _invitation(visit)
    invitation = Invitation.objects.get(email=DAVE)
    invitation_withdraw(project=invitation.project, invitation_id=invitation.id)
    visit.browser.open(link(visit.smtp_sink, "/signup"))


def _by_invitation_only(visit: Visit) -> None:
    visit.settings.SIGNUPS_DISABLED = True
    visit.browser.open("/signup")


# Each account page a person can reach: how the browser gets there.
PAGES = {
    "account-verify-email": _verify_email,
    "account-verified": _verified,
    "account-reset-password": _reset_password,
    "account-reset-password-refused": _reset_password_refused,
    "account-signup": lambda visit: visit.browser.open("/signup"),
    "account-signup-by-invitation-only": _by_invitation_only,
    "account-invitation": _invitation,
    "account-invitation-sign-in": lambda visit: _invitation(visit, account=True),
    "account-invitation-joined": _joined,
    "account-invitation-withdrawn": _withdrawn,
}


@pytest.mark.parametrize("page", PAGES)
def test_account_page_is_accessible_and_fits_a_phone(browser, smtp_sink, settings, project, page):
    PAGES[page](Visit(browser=browser, smtp_sink=smtp_sink, settings=settings, project=project))
    assert browser.page_problems(page, min_font_px=16) == []
