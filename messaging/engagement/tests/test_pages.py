"""The hosted unsubscribe, subscribe and manage pages, and the RFC 8058 one-click POST, driven over HTTP."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from contacts.models import Contact, Event
from messaging.engagement.links import system_links

pytestmark = pytest.mark.django_db


@pytest.fixture
def contact(project):
    return Contact.objects.create(project=project.project, email="ann@example.test", subscribed=True)


def links_for(contact):
    return system_links(contact_id=contact.id, email_id=None)


def path_of(url: str) -> str:
    return url.removeprefix("http://localhost:8000")


def subscription_events(contact):
    return list(Event.objects.filter(contact=contact).order_by("created_at").values_list("name", "data"))


def test_unsubscribe_link_from_a_received_email_and_confirm(send, smtp_sink, secret_client, client):
    template = secret_client.post(
        "/templates",
        {"name": "News", "subject": "News", "body": "<html><body><p>News</p></body></html>", "from": "n@alice.test"},
        format="json",
    ).json()
    assert send({"to": "ann@example.test", "template": template["id"], "subscribed": True}).status_code == 200
    [url] = re.findall(r'href="(http://localhost:8000/unsubscribe/[^"]+)"', smtp_sink.received[0].html)

    page = client.get(path_of(url))
    assert page.status_code == 200
    assert "ann@example.test" in page.content.decode()
    assert '<form method="post"' in page.content.decode()
    contact = Contact.objects.get(email="ann@example.test")
    assert contact.subscribed is True, "a GET (link scanners, prefetch) must change nothing"

    done = client.post(path_of(url))
    assert done.status_code == 200
    assert "You are unsubscribed" in done.content.decode()
    contact.refresh_from_db()
    assert contact.subscribed is False
    assert ("contact.unsubscribed", {"source": "page"}) in subscription_events(contact)


def test_one_click_post_without_cookies_or_csrf_token(contact, client):
    client = type(client)(enforce_csrf_checks=True)
    url = path_of(links_for(contact)["unsubscribeUrl"])
    response = client.post(url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    contact.refresh_from_db()
    assert contact.subscribed is False
    assert subscription_events(contact) == [("contact.unsubscribed", {"source": "page"})]
    # Once more: nothing changes, nothing more is recorded.
    assert (
        client.post(url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded").status_code
        == 200
    )
    assert len(subscription_events(contact)) == 1


def test_subscribe_page(contact, client):
    contact.subscribed = False
    contact.save()
    url = path_of(links_for(contact)["subscribeUrl"])
    assert "Subscribe" in client.get(url).content.decode()
    response = client.post(url)
    assert response.status_code == 200
    contact.refresh_from_db()
    assert contact.subscribed is True
    assert subscription_events(contact) == [("contact.subscribed", {"source": "page"})]


@pytest.mark.parametrize(
    ("period", "days"), [("2w", (14, 14)), ("1m", (28, 31)), ("6m", (181, 184)), ("12m", (365, 366))]
)
def test_manage_page_snoozes_marketing_mail(contact, client, period, days):
    url = path_of(links_for(contact)["manageUrl"])
    page = client.get(url).content.decode()
    assert f'value="{period}"' in page
    response = client.post(url, {"action": "snooze", "period": period})
    assert response.status_code == 200
    assert "paused until" in response.content.decode()
    contact.refresh_from_db()
    assert contact.subscribed is True
    low, high = days
    remaining = contact.snoozed_until - timezone.now()
    assert timedelta(days=low) - timedelta(minutes=1) < remaining <= timedelta(days=high)
    assert subscription_events(contact) == []

    client.post(url, {"action": "resume"})
    contact.refresh_from_db()
    assert contact.snoozed_until is None


def test_manage_page_unsubscribes_and_subscribes(contact, client):
    url = path_of(links_for(contact)["manageUrl"])
    assert "You are unsubscribed." in client.post(url, {"action": "unsubscribe"}).content.decode()
    contact.refresh_from_db()
    assert contact.subscribed is False
    assert "You are subscribed." in client.post(url, {"action": "subscribe"}).content.decode()
    contact.refresh_from_db()
    assert contact.subscribed is True
    assert [name for name, _ in subscription_events(contact)] == ["contact.unsubscribed", "contact.subscribed"]


def test_manage_page_unknown_action_changes_nothing(contact, client):
    url = path_of(links_for(contact)["manageUrl"])
    assert client.post(url, {"action": "snooze", "period": "99y"}).status_code == 400
    contact.refresh_from_db()
    assert contact.snoozed_until is None and contact.subscribed is True


@pytest.mark.parametrize("page", ["unsubscribe", "subscribe", "manage"])
def test_forged_or_altered_token_is_a_404_page(contact, client, page):
    token = links_for(contact)["unsubscribeUrl"].rsplit("/", 1)[1]
    for bad in ["nonsense", token[:-2] + ("AA" if not token.endswith("AA") else "BB"), "W10:xyz"]:
        for method in (client.get, client.post):
            response = method(f"/{page}/{bad}")
            assert response.status_code == 404
            assert "Link not valid" in response.content.decode()
    contact.refresh_from_db()
    assert contact.subscribed is True and not Event.objects.exists()


@pytest.mark.parametrize("page", ["unsubscribe", "subscribe", "manage"])
def test_link_of_a_deleted_contact_is_a_friendly_page(contact, client, page):
    url = path_of(links_for(contact)[f"{page}Url"])
    contact.delete()
    response = client.get(url)
    assert response.status_code == 200
    assert "nothing to change" in response.content.decode()
    assert (
        client.post(url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded").status_code
        == 200
    )


def test_pages_refuse_other_methods(contact, client):
    assert client.put(path_of(links_for(contact)["unsubscribeUrl"])).status_code == 405


def test_one_click_from_the_list_unsubscribe_header_of_a_received_email(send, smtp_sink, secret_client, client):
    template = secret_client.post(
        "/templates",
        {"name": "News", "subject": "News", "body": "<p>News</p>", "from": "n@alice.test"},
        format="json",
    ).json()
    send({"to": "ann@example.test", "template": template["id"], "subscribed": True})
    message = smtp_sink.received[0].message
    [url] = re.findall(r"<(http[^>]+)>", message["List-Unsubscribe"])
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    response = type(client)(enforce_csrf_checks=True).post(
        path_of(url), "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200 and response.content == b""
    contact = Contact.objects.get(email="ann@example.test")
    assert contact.subscribed is False
    assert ("contact.unsubscribed", {"source": "page"}) in subscription_events(contact)
