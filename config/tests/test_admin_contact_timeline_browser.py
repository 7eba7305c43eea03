"""A contact's page in the console in a real browser (config/tests/browser.py): an operator opens it from the contact
list, reads the timeline and pages back; the page passes axe and the phone checks, its screenshots going to
docs/screenshots with `make screenshots`."""

import pytest

from config.tests.contact_history import ADDRESS, contact_with_history, same_address_elsewhere
from config.tests.test_admin_browser import log_in, operator  # noqa: F401 - the operator fixture

pytestmark = pytest.mark.browser


def test_an_operator_reads_a_contacts_timeline(any_browser, operator, project, other_project):  # noqa: F811
    history = contact_with_history(project.project)
    same_address_elsewhere(other_project.project)
    any_browser.open(f"/admin/login/?next=/admin/contacts/contact/?q={ADDRESS}")
    log_in(any_browser)
    rows = any_browser.driver.find_elements("css selector", "#result_list tbody tr")
    assert len(rows) == 2  # Ann in both projects
    link = any_browser.driver.find_element(
        "css selector", f'a[href="/admin/contacts/contact/{history.contact.id}/timeline/"]'
    )
    any_browser._submit(link)
    text = any_browser.text
    assert f"Timeline of {ADDRESS}" in any_browser.title
    assert "Unsubscribed since" in text and "Onboarding: WAITING, at step Wait a day (DELAY)" in text
    assert "Welcome, Ann: CLICKED, 2 open(s), 1 click(s)" in text
    assert "Other project's subject" not in text and "bob-only" not in text


def test_the_timeline_is_accessible_and_fits_a_phone(browser, operator, project):  # noqa: F811
    contact = contact_with_history(project.project).contact
    browser.open(f"/admin/login/?next=/admin/contacts/contact/{contact.id}/timeline/")
    log_in(browser)
    assert browser.page_problems("admin-contact-timeline", min_font_px=12, min_tap_px=None) == []
