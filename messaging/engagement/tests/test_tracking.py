"""Open and click tracking end to end: send through a real SMTP server, follow the pixel and the links in the
received HTML, and check the email row and the events."""

import re
import uuid

import pytest
from django.core import signing
from django.db import connection
from django.test import Client

from accounts.models import Project
from config.tests.wsgi import wsgi_call
from conftest import concurrently
from contacts.models import Event
from messaging.engagement.links import system_links
from messaging.engagement.tests.conftest import sent_email
from messaging.engagement.tracking import click_token, click_token_read, open_token
from messaging.models import Email

pytestmark = pytest.mark.django_db
BASE = "http://localhost:8000"
BODY = (
    "<html><body><p>Hi</p>"
    '<a href="https://shop.example/sale?a=1&amp;b=2">Sale</a> '
    "<A class='x' HREF='http://example.org/blog'>Blog</A> "
    '<a href="mailto:help@alice.test">Mail us</a> <a href="#top">Top</a>'
    "</body></html>"
)


def tracked(html: str) -> tuple[list[str], list[str]]:
    clicks = re.findall(rf"""href=["']{BASE}(/c/[^"']+)["']""", html, re.IGNORECASE)
    opens = re.findall(rf'<img src="{BASE}(/o/[^"]+)"', html)
    return clicks, opens


def marketing_template(secret_client, body=BODY) -> str:
    return secret_client.post(
        "/templates",
        {"name": "News", "subject": "News", "body": body, "from": "news@alice.test"},
        format="json",
    ).json()["id"]


def events(name: str) -> list[dict]:
    return list(Event.objects.filter(name=name).order_by("created_at", "id").values_list("data", flat=True))


def test_pixel_and_links_end_to_end(send, smtp_sink, secret_client, client):
    response = send({"to": "ann@example.test", "template": marketing_template(secret_client), "subscribed": True})
    assert response.status_code == 200
    html = smtp_sink.received[0].html
    email = Email.objects.get()
    assert email.status == Email.Status.SENT and email.html == html

    [sale, blog], [pixel] = tracked(html)
    assert 'href="mailto:help@alice.test"' in html and 'href="#top"' in html
    # The unsubscribe footer link is left alone and comes after the pixel.
    unsubscribe = system_links(contact_id=email.contact_id, email_id=email.id)["unsubscribeUrl"]
    assert f'href="{unsubscribe}"' in html
    assert html.index(pixel) < html.index(unsubscribe)

    # Opens: every hit counts, the first sets the timestamp.
    for _ in range(2):
        hit = client.get(pixel)
        assert hit.status_code == 200 and hit["Content-Type"] == "image/gif"
        assert hit.content.startswith(b"GIF89a") and "no-store" in hit["Cache-Control"]
    email.refresh_from_db()
    first_open = email.opened_at
    assert first_open is not None and email.opens == 2 and email.status == Email.Status.OPENED
    first, second = events("email.open")
    assert first["isFirstOpen"] is True and first["opens"] == 1
    assert second["isFirstOpen"] is False and second["opens"] == 2
    assert first["openedAt"].endswith("Z")
    assert first["emailId"] == str(email.id) and first["messageId"] == email.message_id
    assert first["subject"] == "News" and first["from"] == "news@alice.test" and first["source"] == "api"
    assert Event.objects.filter(name="email.open", email_id=email.id, contact_id=email.contact_id).count() == 2

    # Clicks: a 302 to the real target (HTML entities decoded), counted per hit.
    assert client.get(sale)["Location"] == "https://shop.example/sale?a=1&b=2"
    redirect = client.get(blog)
    assert redirect.status_code == 302 and redirect["Location"] == "http://example.org/blog"
    email.refresh_from_db()
    assert email.clicks == 2 and email.clicked_at is not None and email.status == Email.Status.CLICKED
    first, second = events("email.click")
    assert first["link"] == "https://shop.example/sale?a=1&b=2" and first["isFirstClick"] is True
    assert first["clicks"] == 1 and first["clickedAt"].endswith("Z")
    assert second["link"] == "http://example.org/blog" and second["isFirstClick"] is False and second["clicks"] == 2

    # An open after a click never moves the status back; the first-open time stays.
    client.get(pixel)
    email.refresh_from_db()
    assert email.status == Email.Status.CLICKED and email.opens == 3 and email.opened_at == first_open


def test_bad_tokens_are_404_and_record_nothing(send, smtp_sink, secret_client, client):
    send({"to": "ann@example.test", "template": marketing_template(secret_client), "subscribed": True})
    email = Email.objects.get()
    [sale, _], [pixel] = tracked(email.html)
    email_id, _url = click_token_read(sale.removeprefix("/c/"))
    # Same email id, another target: the signature no longer matches, no open redirect.
    forged = click_token(email_id, "https://evil.example/")
    altered = forged.rsplit(":", 1)[0] + ":" + sale.rsplit(":", 1)[1]
    unsubscribe_token = system_links(contact_id=email.contact_id, email_id=email.id)["unsubscribeUrl"].rsplit("/")[-1]
    for path in [
        f"/c/{altered}",
        f"/c/{sale[3:-3]}",
        "/c/nonsense",
        f"/c/{pixel[3:]}",  # an open token is not a click token
        f"/o/{pixel[3:-2]}xx",
        "/o/nonsense",
        f"/o/{sale[3:]}",
        f"/o/{unsubscribe_token}",  # nor is a page token
        f"/c/{unsubscribe_token}",
    ]:
        response = client.get(path)
        assert response.status_code == 404, path
        assert "Location" not in response
    email.refresh_from_db()
    assert (email.opens, email.clicks, email.opened_at, email.clicked_at) == (0, 0, None, None)
    assert email.status == Email.Status.SENT
    assert not Event.objects.filter(name__in=["email.open", "email.click"]).exists()
    with pytest.raises(signing.BadSignature):
        click_token_read(altered)


@pytest.mark.parametrize(
    ("mode", "template_type", "tracked_expected"),
    [
        ("ENABLED", "TRANSACTIONAL", True),
        ("ENABLED", "MARKETING", True),
        ("DISABLED", "MARKETING", False),
        ("DISABLED", "TRANSACTIONAL", False),
        ("MARKETING_ONLY", "TRANSACTIONAL", False),
        ("MARKETING_ONLY", "MARKETING", True),
        ("MARKETING_ONLY", "HEADLESS", True),
    ],
)
def test_tracking_mode(send, smtp_sink, secret_client, project, mode, template_type, tracked_expected):
    Project.objects.filter(pk=project.id).update(tracking_mode=mode)
    template = secret_client.post(
        "/templates",
        {"name": "T", "subject": "S", "body": BODY, "from": "a@alice.test", "type": template_type},
        format="json",
    ).json()["id"]
    assert send({"to": "ann@example.test", "template": template, "subscribed": True}).status_code == 200
    clicks, opens = tracked(smtp_sink.received[0].html)
    assert (len(clicks), len(opens)) == ((2, 1) if tracked_expected else (0, 0))
    if not tracked_expected:
        assert 'href="https://shop.example/sale?a=1&amp;b=2"' in smtp_sink.received[0].html


def test_default_mode_is_enabled_and_shown_in_admin(project, admin_client):
    assert Project.objects.get(pk=project.id).tracking_mode == "ENABLED"
    page = admin_client.get(f"/admin/accounts/project/{project.id}/change/")
    assert page.status_code == 200 and 'name="tracking_mode"' in page.content.decode()
    response = admin_client.get("/admin/accounts/project/?tracking_mode__exact=DISABLED")
    assert response.status_code == 200


def test_body_without_body_tag_gets_the_pixel_at_the_end(send, smtp_sink):
    send(
        {"to": "ann@example.test", "from": "a@alice.test", "subject": "S", "body": '<a href="https://x.example/">x</a>'}
    )
    html = Email.objects.get().html
    assert re.search(r'<a href="http://localhost:8000/c/[^"]+">x</a><img src="http://localhost:8000/o/[^"]+"', html)


@pytest.mark.parametrize("status", ["BOUNCED", "COMPLAINED", "FAILED"])
def test_hits_count_but_never_hide_a_bounce_or_failure(project, client, status):
    email = Email.objects.create(
        project=project.project, to_email="x@example.test", from_email="a@alice.test", subject="S", status=status
    )
    assert client.get(f"/o/{open_token(email.id)}").status_code == 200
    assert client.get(f"/c/{click_token(email.id, 'https://x.example/')}").status_code == 302
    email.refresh_from_db()
    assert email.status == status and email.opens == 1 and email.clicks == 1
    # No contact on the row: counted, but there is no one to record an event for.
    assert not Event.objects.exists()


def test_hits_are_cheap(send, smtp_sink, client, django_assert_max_num_queries):
    send({"to": "ann@example.test", "from": "a@alice.test", "subject": "S", "body": BODY})
    [sale, _], [pixel] = tracked(Email.objects.get().html)
    # UPDATE, read the row back (with its contact and project), INSERT the event.
    with django_assert_max_num_queries(3):
        assert client.get(pixel).status_code == 200
    with django_assert_max_num_queries(3):
        assert client.get(sale).status_code == 302


def test_hit_for_a_deleted_email_still_answers(project, client):
    assert client.get(f"/o/{open_token(uuid.uuid4())}").status_code == 200
    response = client.get(f"/c/{click_token(uuid.uuid4(), 'https://x.example/a')}")
    assert response.status_code == 302 and response["Location"] == "https://x.example/a"


@pytest.mark.django_db(transaction=True)
def test_concurrent_opens_each_count_once(project):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    email = sent_email(project)
    pixel = f"/o/{open_token(email.id)}"

    assert set(concurrently(lambda _: Client().get(pixel).status_code, range(12), threads=6)) == {200}
    email.refresh_from_db()
    assert email.opens == 12 and email.status == Email.Status.OPENED
    data = events("email.open")
    assert sorted(d["opens"] for d in data) == list(range(1, 13))
    assert [d["isFirstOpen"] for d in data].count(True) == 1


def test_page_links_in_a_transactional_body_stay_untracked(send, smtp_sink):
    body = '<p><a href="{{ manageUrl }}">Preferences</a> <a href="https://x.example/">x</a></p>'
    send({"to": "ann@example.test", "from": "a@alice.test", "subject": "S", "body": body})
    email = Email.objects.get()
    manage = system_links(contact_id=email.contact_id, email_id=email.id)["manageUrl"]
    assert f'href="{manage}"' in email.html
    assert len(tracked(email.html)[0]) == 1
    # The transactional email links to the manage page, so it still gets the List-Unsubscribe headers.
    assert smtp_sink.received[0].message["List-Unsubscribe"].startswith("<http://localhost:8000/unsubscribe/")


def test_the_served_application_answers_hits_in_front_of_django(project):
    email = Email.objects.create(
        project=project.project, to_email="x@example.test", from_email="a@alice.test", subject="S", status="SENT"
    )
    pixel = wsgi_call("GET", f"/o/{open_token(email.id)}")
    assert (pixel.status, pixel.headers["Content-Type"], pixel.body[:6]) == (200, "image/gif", b"GIF89a")
    assert "no-store" in pixel.headers["Cache-Control"]
    # A target with characters a header cannot carry is percent-encoded, never a second header line.
    target = "https://x.example/a b\r\nSet-Cookie: x=1"
    click = wsgi_call("GET", f"/c/{click_token(email.id, target)}")
    assert (click.status, click.headers["Location"], click.body) == (
        302,
        "https://x.example/a%20b%0D%0ASet-Cookie:%20x=1",
        b"",
    )
    email.refresh_from_db()
    assert (email.opens, email.clicks, email.status) == (1, 1, Email.Status.CLICKED)

    # Everything else goes on to Django: a forged token gets the 404 page, a POST is refused; nothing is counted.
    forged = click_token(email.id, "https://x.example/a")[:-2] + "xx"
    forged_click = wsgi_call("GET", f"/c/{forged}")
    assert forged_click.status == 404 and b"This link is not valid" in forged_click.body
    assert wsgi_call("GET", f"/o/{open_token(email.id)}x").status == 404
    assert wsgi_call("POST", f"/o/{open_token(email.id)}").status in (403, 405)
    email.refresh_from_db()
    assert (email.opens, email.clicks) == (1, 1)


def test_hits_in_front_of_django_follow_its_host_and_https_settings(project, settings, client):
    email = Email.objects.create(
        project=project.project, to_email="x@example.test", from_email="a@alice.test", subject="S", status="SENT"
    )
    pixel, click = f"/o/{open_token(email.id)}", f"/c/{click_token(email.id, 'https://x.example/a')}"
    settings.SECURE_HSTS_SECONDS = 3600
    served = wsgi_call("GET", pixel, secure=True)
    assert (served.status, served.by_django) == (200, False)
    assert served.headers["Strict-Transport-Security"] == "max-age=3600"
    viewed = client.get(pixel, secure=True)
    # The same headers as the view's but the request id (a hit answered in front of Django logs nothing to find).
    assert {name.lower() for name in served.headers} == {name.lower() for name in viewed.headers} - {"x-request-id"}
    assert "Strict-Transport-Security" not in wsgi_call("GET", pixel).headers  # plain http: no HSTS, as Django

    # What Django answers itself it still answers, and the hit is not counted.
    email.refresh_from_db()
    opens = email.opens
    refused = wsgi_call("GET", pixel, headers={"Host": "evil.example"})
    assert (refused.status, refused.by_django) == (400, True)
    settings.SECURE_SSL_REDIRECT = True
    redirected = wsgi_call("GET", click)
    assert (redirected.status, redirected.by_django) == (301, True)
    assert redirected.headers["Location"] == f"https://localhost{click}"
    email.refresh_from_db()
    assert (email.opens, email.clicks) == (opens, 0)
    assert wsgi_call("GET", click, secure=True).status == 302
