"""A contact's page in the console (/admin/contacts/contact/<id>/timeline/): its data, subscription and segments, and
one newest-first timeline of its events, emails, workflow executions and activity, paged a window at a time, with
the same few queries per page, and nothing of another contact or project."""

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import User
from config.tests.contact_history import ADDRESS, MESSAGE_ID, contact_with_history, email, event, same_address_elsewhere
from contacts.models import Contact, Event
from messaging.insights.timeline import TIMELINE_PAGE_SIZE, TIMELINE_WINDOW

pytestmark = pytest.mark.django_db


def url(contact) -> str:
    return f"/admin/contacts/contact/{contact.id}/timeline/"


def table(page: str, table_id: str) -> list[list[str]]:
    """The cells of a table's body rows, as text."""
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)
        ]
        for r in rows
    ]


def older_link(page: str) -> str | None:
    found = re.search(r'<a href="(\?cursor=[^"]+)">Older</a>', page)
    return html.unescape(found.group(1)) if found else None


def test_the_page_shows_the_contact_and_one_newest_first_timeline(admin_client, project, other_project):
    history = contact_with_history(project.project)
    same_address_elsewhere(other_project.project)
    response = admin_client.get(url(history.contact))
    assert response.status_code == 200
    page = response.content.decode()

    contact = dict(table(page, "contact"))
    assert contact["Email"] == ADDRESS
    assert contact["Subscription"] == f"Unsubscribed since {history.unsubscribed_at:%Y-%m-%d %H:%M} UTC"
    assert table(page, "contact-data") == [
        ["name", "Ann"],
        ["plan", "pro"],
        ["tags", '[\n "early",\n "vip"\n]'],
        ["visits", "3"],
    ]
    # Present memberships only (not Trial, left), each saying which kind it is.
    assert [row[:2] for row in table(page, "contact-segments")] == [["Active", "dynamic, tracked"], ["VIP", "static"]]

    rows = table(page, "timeline")
    assert [(what, details) for _, what, details in rows] == [
        (what, next(d for _, w, d in rows if w == what and part in d)) for what, part in history.expected
    ]
    times = [when for when, _, _ in rows]
    assert times == sorted(times, reverse=True)
    # Email events say what tells them apart; their ids are on the email's page.
    assert MESSAGE_ID not in html.unescape(page)
    # The email row and its events link to the email's admin page; the execution to its own.
    assert page.count(f'href="/admin/messaging/email/{history.email.id}/change/"') == 5
    assert f'href="/admin/workflows/workflowexecution/{history.execution.id}/change/"' in page
    # Nothing of Bob's (same project) or of Ann's namesake in the other project.
    for theirs in ("bob-only", "Bob's receipt", "other-project-event", "Other project's subject", "secret"):
        assert theirs not in page
    # The history fits one window: no older page.
    assert older_link(page) is None and "The timeline starts with the contact's creation." in page


def test_the_contact_admin_links_to_the_page(admin_client, project):
    contact = contact_with_history(project.project).contact
    timeline = f'href="{url(contact)}"'
    assert timeline in admin_client.get("/admin/contacts/contact/").content.decode()
    assert timeline in admin_client.get(f"/admin/contacts/contact/{contact.id}/change/").content.decode()


def test_pages_return_every_item_once_in_order(admin_client, project):
    """A long history, dense and sparse: 130 events over a year (two long quiet spells) and 20 emails on one
    day. Walking the Older links returns each once, newest first, and ends at the contact's creation."""
    now = timezone.now()
    contact = Contact.objects.create(project=project.project, email=ADDRESS, created_at=now - timedelta(days=400))
    moments = [now - timedelta(days=390) + timedelta(hours=6 * i) for i in range(60)]  # 15 dense days
    moments += [now - timedelta(days=200) + timedelta(days=i) for i in range(70)]  # one a day
    events = [event(contact, f"e{i}", at) for i, at in enumerate(moments)]
    emails = [email(contact, f"Subject {i}", now - timedelta(days=3, minutes=i)) for i in range(20)]
    # Two rows at the same moment still come once each, ordered by id.
    events.append(event(contact, "twin", moments[70]))
    expected = sorted(
        [(e.created_at, str(e.id)) for e in events] + [(m.created_at, str(m.id)) for m in emails], reverse=True
    )

    seen, pages, next_url = [], 0, url(contact)
    while next_url:
        page = admin_client.get(next_url).content.decode()
        rows = table(page, "timeline")
        pages += 1
        assert len([row for row in rows if len(row) == 3]) <= TIMELINE_PAGE_SIZE
        seen += re.findall(r"data-item=\"([^\"]+)\"", page)
        link = older_link(page)
        next_url = url(contact) + link if link else None
        assert pages < 20
    assert seen == [item_id for _, item_id in expected]
    # More than a page in one window continues within it; quiet windows cost a page each, down to the creation.
    assert pages >= 400 // TIMELINE_WINDOW.days


def test_a_page_costs_the_same_queries_however_long_the_history(admin_client, project):
    small = contact_with_history(project.project).contact
    big = Contact.objects.create(project=project.project, email="big@example.test")
    now = timezone.now()
    Event.objects.bulk_create(
        Event(project=project.project, contact=big, name=f"e{i}", created_at=now - timedelta(minutes=i))
        for i in range(300)
    )
    for i in range(80):
        email(big, f"S{i}", now - timedelta(minutes=i, seconds=30))
    counts = []
    for contact in (small, big):
        admin_client.get(url(contact))  # the session and the user are read once cached alike
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url(contact)).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]
    # Session, user, contact, subscription, memberships and one query per source of the timeline.
    assert counts[1] <= 12


def test_every_query_of_the_timeline_names_its_window(admin_client, project):
    contact = contact_with_history(project.project).contact
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(url(contact))
    history = ("contacts_event", "messaging_email", "workflows_workflowexecution", "workflows_refusedstart")
    for query in queries.captured_queries:
        sql = query["sql"]
        if any(f'FROM "{name}"' in sql for name in history):
            assert re.search(r"(created_at|started_at|completed_at)\" >= ", sql), sql
            assert "LIMIT" in sql, sql


def test_a_staff_user_without_the_view_permission_is_refused(client, project):
    contact = contact_with_history(project.project).contact
    staff = User.objects.create_user(email="staff@example.test", password="pw-staff-1234", is_staff=True)
    client.force_login(staff)
    assert client.get(url(contact)).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_contact"))
    staff = User.objects.get(pk=staff.pk)  # permissions are cached on the instance
    client.force_login(staff)
    assert client.get(url(contact)).status_code == 200


def test_anonymous_visitors_go_to_the_login(client, project):
    contact = contact_with_history(project.project).contact
    response = client.get(url(contact))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_an_unknown_contact_is_not_found_and_a_bad_cursor_shows_the_newest(admin_client, project):
    history = contact_with_history(project.project)
    assert admin_client.get("/admin/contacts/contact/00000000-0000-0000-0000-000000000000/timeline/").status_code == 404
    response = admin_client.get(url(history.contact), {"cursor": "not-a-cursor"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "That page of the timeline is not valid" in page and "Welcome, Ann" in page


def test_the_api_feed_keeps_to_its_activity_types(secret_client, project):
    """The emails' rows and segment events are the timeline's alone: the API's feed and types do not list them."""
    contact = contact_with_history(project.project).contact
    items = secret_client.get("/activity", {"contactId": str(contact.id), "limit": 100}).json()["data"]
    assert {item["type"] for item in items} == {
        "event.triggered", "email.sent", "email.opened", "email.clicked", "contact.unsubscribed", "workflow.started",
    }  # fmt: skip
    assert all("detail" not in item for item in items)
    assert secret_client.get("/activity", {"types": "email"}).status_code == 422
    assert "email" not in secret_client.get("/activity/types").json()["types"]
