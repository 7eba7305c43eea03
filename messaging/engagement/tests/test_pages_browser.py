"""The hosted unsubscribe, subscribe and manage pages in a real browser (config/tests/browser.py): each flow with
JavaScript on and off, asserting what the reader sees and what the database then holds; and every page passes axe
and the phone checks, its screenshots going to docs/screenshots with `make screenshots`."""

import pytest

from contacts.models import Contact, Event
from messaging.engagement.links import system_links

pytestmark = pytest.mark.browser

EMAIL = "ann@example.test"


@pytest.fixture
def contact(project, other_project):
    # The same address in another project, which no page of ours may show or change.
    Contact.objects.create(project=other_project.project, email=EMAIL, subscribed=True)
    return Contact.objects.create(project=project.project, email=EMAIL, subscribed=True)


def links(contact) -> dict[str, str]:
    return system_links(contact_id=contact.id, email_id=None)


def subscribed(contact) -> bool:
    contact.refresh_from_db()
    return contact.subscribed


def events(contact) -> list[str]:
    return list(Event.objects.filter(contact=contact).order_by("created_at").values_list("name", flat=True))


def assert_other_project_untouched(other_project):
    other = Contact.objects.get(project=other_project.project, email=EMAIL)
    assert other.subscribed is True and other.snoozed_until is None
    assert not Event.objects.filter(contact=other).exists()


def test_unsubscribe_then_subscribe_again(any_browser, contact, project, other_project):
    any_browser.open(links(contact)["unsubscribeUrl"])
    assert "Alice's shop" in any_browser.text and "Bob's shop" not in any_browser.text
    assert any_browser.title == "Unsubscribe · Alice's shop"
    assert f"Stop sending emails to {EMAIL}?" in any_browser.text
    assert subscribed(contact), "opening the page changes nothing"

    any_browser.press("Unsubscribe")
    assert "You are unsubscribed" in any_browser.text
    assert f"{EMAIL} will no longer receive our marketing emails." in any_browser.text
    assert not subscribed(contact)
    assert events(contact) == ["contact.unsubscribed"]

    any_browser.press("Unsubscribed by mistake? Subscribe again")
    assert f"{EMAIL} will receive our emails again." in any_browser.text
    assert subscribed(contact)
    assert events(contact) == ["contact.unsubscribed", "contact.subscribed"]
    assert_other_project_untouched(other_project)


def test_subscribe(any_browser, contact, other_project):
    Contact.objects.filter(pk=contact.pk).update(subscribed=False)
    any_browser.open(links(contact)["subscribeUrl"])
    assert f"Receive our emails at {EMAIL} again?" in any_browser.text
    any_browser.press("Subscribe")
    assert "You are subscribed" in any_browser.text
    assert subscribed(contact)
    assert_other_project_untouched(other_project)


def test_manage_pause_resume_unsubscribe_and_subscribe(any_browser, contact, other_project):
    any_browser.open(links(contact)["manageUrl"])
    assert f"For {EMAIL}: subscribed." in any_browser.text

    any_browser.choose("6 months")
    any_browser.press("Pause")
    assert "Marketing emails are paused for 6 months." in any_browser.text
    contact.refresh_from_db()
    assert contact.subscribed and contact.snoozed_until is not None
    assert f"marketing emails paused until {contact.snoozed_until.day} " in any_browser.text

    any_browser.press("Resume marketing emails now")
    assert "Marketing emails are no longer paused." in any_browser.text
    contact.refresh_from_db()
    assert contact.snoozed_until is None

    any_browser.press("Unsubscribe from all marketing emails")
    assert "You are unsubscribed." in any_browser.text and f"For {EMAIL}: unsubscribed." in any_browser.text
    assert not subscribed(contact)

    any_browser.press("Subscribe again")
    assert "You are subscribed." in any_browser.text
    assert subscribed(contact)
    assert events(contact) == ["contact.unsubscribed", "contact.subscribed"]
    assert_other_project_untouched(other_project)


def test_unsubscribe_page_links_to_the_preferences(any_browser, contact):
    any_browser.open(links(contact)["unsubscribeUrl"])
    any_browser.follow("Manage your preferences")
    assert "Email preferences" in any_browser.text and EMAIL in any_browser.text
    assert subscribed(contact)


def _unsubscribed(browser, contact):
    browser.open(links(contact)["unsubscribeUrl"])
    browser.press("Unsubscribe")


def _subscribe(browser, contact):
    Contact.objects.filter(pk=contact.pk).update(subscribed=False)
    browser.open(links(contact)["subscribeUrl"])


def _snoozed(browser, contact):
    browser.open(links(contact)["manageUrl"])
    browser.press("Pause")


# Each page a reader can reach: how the browser gets there.
PAGES = {
    "unsubscribe": lambda browser, contact: browser.open(links(contact)["unsubscribeUrl"]),
    "unsubscribed": _unsubscribed,
    "subscribe": _subscribe,
    "manage": lambda browser, contact: browser.open(links(contact)["manageUrl"]),
    "manage-paused": _snoozed,
    "link-not-valid": lambda browser, contact: browser.open("/manage/not-a-token"),
}


@pytest.mark.parametrize("page", PAGES)
def test_page_is_accessible_and_fits_a_phone(browser, contact, page):
    PAGES[page](browser, contact)
    if page != "link-not-valid":
        assert "Alice's shop" in browser.text
    assert browser.page_problems(page, min_font_px=16) == []
