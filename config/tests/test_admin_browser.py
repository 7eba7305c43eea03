"""The Django admin in a real browser (config/tests/browser.py): an operator logs in with JavaScript on and off,
and every admin page in ADMIN_PAGES passes axe and the phone checks, its screenshots going to docs/screenshots with
`make screenshots`."""

import pytest

from accounts.models import User

pytestmark = pytest.mark.browser

# The admin pages an operator uses, by screenshot name: one line each.
ADMIN_PAGES = {
    "admin-index": "/admin/",
    "admin-dashboard": "/admin/dashboard/",
}

EMAIL, PASSWORD = "operator@example.test", "the operator's password"


@pytest.fixture
def operator(db):
    return User.objects.create_superuser(email=EMAIL, password=PASSWORD)


def log_in(browser, password: str = PASSWORD) -> None:
    browser.fill("username", EMAIL)
    browser.fill("password", password)
    browser.press("Log in")


def test_operator_logs_in(any_browser, operator):
    any_browser.open("/admin/")
    assert "Log in" in any_browser.title

    log_in(any_browser, password="not the password")
    assert "Please enter the correct email and password for a staff account." in any_browser.text

    log_in(any_browser)
    assert "Herald administration" in any_browser.text and "Site administration" in any_browser.text
    assert f"WELCOME, {EMAIL.upper()}." in any_browser.text.upper()


def test_login_page_is_accessible_and_fits_a_phone(browser, operator):
    browser.open("/admin/login/")
    assert browser.page_problems("admin-login", min_font_px=12, min_tap_px=None) == []


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_page_is_accessible_and_fits_a_phone(browser, operator, page):
    browser.open(f"/admin/login/?next={ADMIN_PAGES[page]}")
    log_in(browser)
    assert browser.page_problems(page, min_font_px=12, min_tap_px=None) == []
