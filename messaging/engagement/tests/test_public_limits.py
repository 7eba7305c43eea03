"""Per-client-address limits on the open pixel, the click redirect and the hosted pages, over HTTP: through
Django's views and through the application gunicorn serves (which answers valid hits in front of Django)."""

import pytest
from django.test import Client

from config.tests.wsgi import wsgi_call
from contacts.models import Contact
from messaging.engagement.links import system_links
from messaging.engagement.tracking import click_token, open_token
from messaging.feedback.tests.feedback import sent_email
from messaging.models import Email

pytestmark = pytest.mark.django_db
TARGET = "https://shop.example/sale?a=1&b=2"


@pytest.fixture
def limit_of_3(settings, one_rate_window):
    settings.TRACKING_RATE_LIMIT_PER_MINUTE = 3


@pytest.fixture(params=["django", "served"])
def get(request):
    """GET a path as one client address, through Django's test client or through config.wsgi.application."""

    def call(path: str, address: str = "192.0.2.1", **headers):
        if request.param == "django":
            meta = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
            return Client(REMOTE_ADDR=address).get(path, **meta)
        return wsgi_call("GET", path, headers=headers, remote_addr=address)

    return call


def recorded(email: Email) -> tuple[int, int]:
    email.refresh_from_db()
    return email.opens, email.clicks


def test_opens_over_the_limit_get_the_pixel_but_are_not_recorded(limit_of_3, get, project):
    email = sent_email(project.project)
    answers = [get(f"/o/{open_token(email.id)}") for _ in range(5)]
    assert [answer.status_code for answer in answers] == [200] * 5
    assert all(answer.headers["Content-Type"] == "image/gif" for answer in answers)
    assert recorded(email) == (3, 0)
    assert get(f"/o/{open_token(email.id)}", address="192.0.2.2").status_code == 200  # another client
    assert recorded(email) == (4, 0)


def test_clicks_over_the_limit_still_redirect_and_share_the_budget_of_opens(limit_of_3, get, project):
    email = sent_email(project.project)
    get(f"/o/{open_token(email.id)}")
    answers = [get(f"/c/{click_token(email.id, TARGET)}") for _ in range(4)]
    assert [(answer.status_code, answer.headers["Location"]) for answer in answers] == [(302, TARGET)] * 4
    assert recorded(email) == (1, 2)


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_client(limit_of_3, get, project, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    email = sent_email(project.project)
    for n in range(4):  # one proxy address, four readers
        get(f"/o/{open_token(email.id)}", address="10.0.0.1", **{"X-Forwarded-For": f"198.51.100.{n}"})
    assert recorded(email) == (4, 0)
    for _ in range(3):  # what a client writes left of its own address changes nothing
        get(f"/o/{open_token(email.id)}", address="10.0.0.1", **{"X-Forwarded-For": "6.6.6.6, 198.51.100.0"})
    assert recorded(email) == (6, 0)  # 198.51.100.0's second and third; its fourth is over the limit


def test_zero_turns_the_tracking_limit_off(get, project, settings):
    settings.TRACKING_RATE_LIMIT_PER_MINUTE = 0
    email = sent_email(project.project)
    for _ in range(5):
        get(f"/o/{open_token(email.id)}")
    assert recorded(email) == (5, 0)


def test_a_bad_token_is_not_counted(limit_of_3, get, project):
    email = sent_email(project.project)
    for _ in range(5):
        assert get(f"/o/{open_token(email.id)}x").status_code == 404
    get(f"/o/{open_token(email.id)}")
    assert recorded(email) == (1, 0)


@pytest.fixture
def pages(project):
    contact = Contact.objects.create(project=project.project, email="ann@example.test", subscribed=True)
    links = system_links(contact_id=contact.id, email_id=None)
    return contact, {name: url.removeprefix("http://localhost:8000") for name, url in links.items()}


def test_pages_over_the_limit_answer_a_short_429_page(limit_of_3, pages, project):
    contact, urls = pages
    client = Client(REMOTE_ADDR="192.0.2.1")
    assert client.get(urls["unsubscribeUrl"]).status_code == 200
    assert client.get(urls["manageUrl"]).status_code == 200
    assert client.get(urls["subscribeUrl"] + "x").status_code == 404  # counted too: no database behind it, but work

    refused = client.post(urls["manageUrl"], {"action": "unsubscribe"})
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("text/html") and "Too many requests" in refused.content.decode()
    assert 1 <= int(refused["Retry-After"]) <= 60 and "no-cache" in refused["Cache-Control"]
    assert client.get(urls["subscribeUrl"]).status_code == 429
    contact.refresh_from_db()
    assert contact.subscribed is True

    assert Client(REMOTE_ADDR="192.0.2.2").get(urls["manageUrl"]).status_code == 200  # another client
    # Pages and tracking are counted apart: the reader's opens are still recorded.
    email = sent_email(project.project)
    client.get(f"/o/{open_token(email.id)}")
    assert recorded(email) == (1, 0)


def test_a_one_click_unsubscribe_is_never_refused(limit_of_3, pages):
    contact, urls = pages
    client = Client(REMOTE_ADDR="192.0.2.1")
    for _ in range(3):
        client.get(urls["manageUrl"])
    assert client.get(urls["unsubscribeUrl"]).status_code == 429
    one_click = client.post(
        urls["unsubscribeUrl"], "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert one_click.status_code == 200
    contact.refresh_from_db()
    assert contact.subscribed is False
    # The one-click body on another page is no pass.
    again = client.post(
        urls["subscribeUrl"], "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert again.status_code == 429
