"""The activity feed and its figures, through the HTTP API: end to end from a real send, the pixel and a tracked
link, then pagination, every filter, bad input and isolation between projects."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from contacts.models import Contact, Event
from core.time import iso
from messaging.engagement.tests.test_tracking import marketing_template, tracked
from messaging.insights import registry
from messaging.insights.registry import ActivityItem, Upcoming
from messaging.models import Email

pytestmark = pytest.mark.django_db


@pytest.fixture
def hit(client, django_capture_on_commit_callbacks):
    """GET a tracking URL and run what its commit announces (the rollup increment), as a real request would."""

    def get(path: str):
        with django_capture_on_commit_callbacks(execute=True):
            return client.get(path)

    return get


@pytest.fixture
def engaged(send, smtp_sink, secret_client, hit):
    """One marketing email to ann, sent through SMTP, opened twice and clicked once."""
    assert send({"to": "ann@example.test", "template": marketing_template(secret_client)}).status_code == 200
    [sale, _], [pixel] = tracked(smtp_sink.received[0].html)
    assert hit(pixel).status_code == 200 and hit(pixel).status_code == 200
    assert hit(sale).status_code == 302
    return Email.objects.get()


def feed(api, **params) -> dict:
    response = api.get("/activity", params)
    assert response.status_code == 200, response.json()
    return response.json()


def test_send_open_click_show_in_the_feed_and_stats(engaged, secret_client):
    page = feed(secret_client)
    types = [item["type"] for item in page["data"]]
    # Newest first: the click, the two opens, the send.
    assert types[:4] == ["email.clicked", "email.opened", "email.opened", "email.sent"]
    assert page["total"] == len(page["data"]) and page["hasMore"] is False and page["cursor"] is None
    click = page["data"][0]
    assert click["contactEmail"] == "ann@example.test" and click["contactId"] == str(engaged.contact_id)
    assert click["emailId"] == str(engaged.id) and click["timestamp"].endswith("Z")
    assert click["metadata"]["link"] == "https://shop.example/sale?a=1&b=2"
    assert click["metadata"]["isFirstClick"] is True and click["metadata"]["subject"] == "News"
    assert set(click) == {"id", "type", "timestamp", "contactId", "contactEmail", "emailId", "metadata"}

    stats = secret_client.get("/activity/stats").json()
    assert stats == {
        "totalEvents": Event.objects.count(),
        "totalEmailsSent": 1,
        "totalEmailsOpened": 1,  # two hits, one email opened
        "totalEmailsClicked": 1,
        "totalWorkflowsStarted": 0,
        "openRate": 100.0,
        "clickRate": 100.0,
    }
    present = secret_client.get("/activity/types").json()["types"]
    assert present[:3] == ["email.sent", "email.opened", "email.clicked"]
    assert "event.triggered" not in present
    assert secret_client.get("/activity/recent-count").json() == {"count": page["total"], "minutes": 5}


def test_tracked_events_and_subscription_changes(secret_client, public_client):
    public_client.post(
        "/v1/track", {"email": "bo@example.test", "event": "signup", "data": {"plan": "pro"}}, format="json"
    )
    contact_id = Contact.objects.get().id
    secret_client.patch(f"/contacts/{contact_id}", {"subscribed": False}, format="json")
    items = feed(secret_client)["data"]
    assert [item["type"] for item in items] == ["contact.unsubscribed", "event.triggered"]
    assert items[1]["metadata"] == {"eventName": "signup", "eventData": {"plan": "pro"}}
    assert items[1]["emailId"] is None
    assert secret_client.get("/activity/types").json()["types"] == ["event.triggered", "contact.unsubscribed"]


def test_types_present_follow_the_names_of_the_projects_events(secret_client, project, ann):
    # A project that sends but tracks nothing: its email and segment events are no `event.triggered`.
    for name in ("email.sent", "email.open", "segment.vip.entry", "email.sent"):
        _events(project.project, ann, 3, name=name, start=timezone.now() - timedelta(days=300))
    assert secret_client.get("/activity/types").json()["types"] == ["email.sent", "email.opened"]
    _events(project.project, ann, 1, name="signup")
    assert secret_client.get("/activity/types").json()["types"] == ["email.sent", "email.opened", "event.triggered"]


def _events(project, contact, count: int, *, name="email.sent", start=None, step=timedelta(minutes=1)):
    start = start or timezone.now() - timedelta(hours=1)
    return Event.objects.bulk_create(
        [Event(project=project, contact=contact, name=name, data={}, created_at=start + i * step) for i in range(count)]
    )


@pytest.fixture
def ann(project):
    return Contact.objects.create(project=project.project, email="ann@example.test")


def test_pages_through_every_item_once_with_ties(secret_client, project, ann):
    # 25 events at one instant (ties broken by id) and 10 spread out.
    now = timezone.now() - timedelta(minutes=30)
    tied = _events(project.project, ann, 25, start=now, step=timedelta(0))
    spread = _events(project.project, ann, 10, name="signup", start=now - timedelta(hours=2))
    seen, cursor, pages = [], None, 0
    while True:
        page = feed(secret_client, limit=7, **({"cursor": cursor} if cursor else {}))
        pages += 1
        assert page["total"] == (35 if pages == 1 else 0)
        seen += [item["id"] for item in page["data"]]
        if not page["hasMore"]:
            break
        cursor = page["cursor"]
    assert pages == 5 and len(seen) == len(set(seen)) == 35
    expected = sorted(tied + spread, key=lambda e: (e.created_at, e.id), reverse=True)
    assert seen == [str(e.id) for e in expected]


def test_filters(secret_client, project, ann):
    bo = Contact.objects.create(project=project.project, email="bo@example.test")
    base = (timezone.now() - timedelta(days=10)).replace(hour=12, minute=0, second=0, microsecond=0)
    next_day = (base + timedelta(days=1)).date().isoformat()
    email_id = uuid.uuid4()
    Event.objects.bulk_create(
        [
            Event(project=project.project, contact=ann, name="email.sent", email_id=email_id, created_at=base),
            Event(
                project=project.project,
                contact=ann,
                name="email.open",
                email_id=email_id,
                created_at=base + timedelta(seconds=1),
            ),
            Event(project=project.project, contact=bo, name="email.bounce", created_at=base + timedelta(days=1)),
            Event(project=project.project, contact=bo, name="signup", created_at=base + timedelta(days=2)),
            Event(project=project.project, contact=bo, name="segment.vip.entry", created_at=base),
            # Before the default window: the 30 days before now, or before endDate.
            Event(project=project.project, contact=ann, name="visited", created_at=base - timedelta(days=40)),
        ]
    )

    def types(**params):
        return [item["type"] for item in feed(secret_client, **params)["data"]]

    # Segment entries are not activity.
    assert types() == ["event.triggered", "email.bounced", "email.opened", "email.sent"]
    assert types(types="email.sent,email.bounced") == ["email.bounced", "email.sent"]
    assert types(types="event.triggered") == ["event.triggered"]
    assert types(types="campaign.sent") == []  # a known type nothing produces yet
    assert types(contactId=str(bo.id)) == ["event.triggered", "email.bounced"]
    assert types(emailId=str(email_id)) == ["email.opened", "email.sent"]
    assert types(startDate=next_day) == ["event.triggered", "email.bounced"]
    assert types(endDate=next_day) == ["email.bounced", "email.opened", "email.sent"]  # the whole day
    assert types(startDate=f"{next_day}T00:00:00Z", endDate=f"{next_day}T23:00:00+00:00") == ["email.bounced"]
    old = (base - timedelta(days=41)).date().isoformat()
    assert types(startDate=old) == ["event.triggered", "email.bounced", "email.opened", "email.sent", "event.triggered"]
    assert types(contactId=str(uuid.uuid4())) == []
    assert feed(secret_client, types="email.sent")["total"] == 1


@pytest.mark.parametrize(
    ("path", "status", "field"),
    [
        ("/activity?types=email.sent,email.exploded", 422, "types"),
        ("/activity?limit=abc", 422, "limit"),
        ("/activity?limit=0", 422, "limit"),
        ("/activity?contactId=nope", 422, "contactId"),
        ("/activity?emailId=nope", 422, "emailId"),
        ("/activity?startDate=yesterday", 422, "startDate"),
        ("/activity?startDate=2026-02-30", 422, "startDate"),
        ("/activity?startDate=2026-03-02&endDate=2026-03-01", 422, "endDate"),
        ("/activity?cursor=forged", 400, None),
        ("/activity/recent-count?minutes=61", 422, "minutes"),
        ("/activity/recent-count?minutes=0", 422, "minutes"),
        ("/activity/stats?days=x", 422, "days"),
        ("/activity/upcoming?limit=abc", 422, "limit"),
        ("/activity/upcoming?daysAhead=-1", 422, "daysAhead"),
    ],
)
def test_bad_input(secret_client, path, status, field):
    response = secret_client.get(path)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["statusCode"] == status and error["requestId"]
    if field:
        assert error["code"] == "VALIDATION_ERROR" and error["errors"][0]["field"] == field


def test_recent_count_window(secret_client, project, ann):
    _events(project.project, ann, 3, start=timezone.now() - timedelta(minutes=2), step=timedelta(seconds=1))
    _events(project.project, ann, 2, start=timezone.now() - timedelta(minutes=30))
    assert secret_client.get("/activity/recent-count").json() == {"count": 3, "minutes": 5}
    assert secret_client.get("/activity/recent-count?minutes=60").json() == {"count": 5, "minutes": 60}


def test_stats_window(secret_client, project, ann):
    _events(project.project, ann, 2, name="signup", start=timezone.now() - timedelta(days=40))
    _events(project.project, ann, 3, name="signup")
    assert secret_client.get("/activity/stats").json()["totalEvents"] == 3
    assert secret_client.get("/activity/stats?days=60").json()["totalEvents"] == 5


@pytest.fixture
def registered(monkeypatch):
    """Register test providers and sources, and forget them afterwards."""
    for hook in (registry.activity_sources, registry.upcoming_providers, registry.activity_counters):
        monkeypatch.setattr(hook, "implementations", dict(hook.implementations))
    return registry


def test_upcoming_comes_from_the_registered_providers(secret_client, other_client, project, registered):
    assert secret_client.get("/activity/upcoming").json() == {"activities": []}
    now = timezone.now()

    def campaigns(*, project, until, limit):
        due = [
            Upcoming(
                id=uuid.uuid4(),
                at=now + timedelta(days=d),
                item={"type": "campaign", "id": str(uuid.uuid4()), "name": f"In {d} days of {project.name}",
                      "scheduledFor": iso(now + timedelta(days=d))},
            )
            for d in (3, 1, 40)
        ]  # fmt: skip
        return [entry for entry in due if entry.at <= until][:limit]

    def workflows(*, project, until, limit):
        item = {"type": "workflow", "id": str(uuid.uuid4()), "workflowId": str(uuid.uuid4()),
                "contactId": str(uuid.uuid4()), "resumeAt": iso(now + timedelta(days=2))}  # fmt: skip
        return [Upcoming(id=uuid.uuid4(), at=now + timedelta(days=2), item=item)]

    registered.upcoming_providers.register(campaigns, key="campaigns")
    registered.upcoming_providers.register(workflows, key="workflows")
    items = secret_client.get("/activity/upcoming?limit=2").json()["activities"]
    assert [item["type"] for item in items] == ["campaign", "workflow"]
    assert items[0]["name"] == f"In 1 days of {project.project.name}"
    assert len(secret_client.get("/activity/upcoming").json()["activities"]) == 3
    assert len(secret_client.get("/activity/upcoming?daysAhead=60").json()["activities"]) == 4


def test_a_registered_source_joins_the_feed(secret_client, project, ann, registered):
    """A campaigns app adds campaign.sent items from its own table: here the emails table stands in for it."""
    _events(project.project, ann, 3, name="signup", start=timezone.now() - timedelta(hours=3), step=timedelta(hours=1))
    sent = [
        Email.objects.create(
            project=project.project,
            to_email="x@example.test",
            subject=f"C{i}",
            from_email="a@alice.test",
            created_at=timezone.now() - timedelta(minutes=150 - 60 * i),
        )
        for i in range(2)
    ]

    def queryset(project, filters):
        if (filters.types is not None and "campaign.sent" not in filters.types) or filters.contact_id:
            return None
        return Email.objects.filter(project=project)

    registered.activity_sources.register(
        registry.ActivitySource(
            name="campaigns",
            types=("campaign.sent",),
            queryset=queryset,
            timestamp_field="created_at",
            item=lambda row: ActivityItem(id=row.id, type="campaign.sent", timestamp=row.created_at),
            present_types=lambda project: ["campaign.sent"],
        ),
        key="campaigns",
    )
    first = feed(secret_client, limit=3)
    assert first["total"] == 5
    second = feed(secret_client, limit=3, cursor=first["cursor"])
    types = [item["type"] for item in first["data"] + second["data"]]
    assert types == ["event.triggered", "campaign.sent", "event.triggered", "campaign.sent", "event.triggered"]
    assert second["hasMore"] is False
    assert [i["id"] for i in first["data"] + second["data"] if i["type"] == "campaign.sent"] == [
        str(sent[1].id),
        str(sent[0].id),
    ]
    assert feed(secret_client, types="campaign.sent")["total"] == 2
    assert "campaign.sent" in secret_client.get("/activity/types").json()["types"]


def test_workflow_counter_feeds_the_stats(secret_client, registered):
    registered.activity_counters.register(lambda *, project, since: 7, key="totalWorkflowsStarted")
    assert secret_client.get("/activity/stats").json()["totalWorkflowsStarted"] == 7
    with pytest.raises(ValueError, match="Unknown key 'totalCats'"):
        registered.activity_counters.register(lambda **_: 0, key="totalCats")


@pytest.mark.parametrize(
    "path",
    ["/activity", "/activity/stats", "/activity/recent-count", "/activity/types", "/activity/upcoming"],
)
def test_other_projects_see_nothing(engaged, other_client, anon_client, path):
    body = other_client.get(path).json()
    expected = {
        "/activity": {"data": [], "cursor": None, "hasMore": False, "total": 0},
        "/activity/stats": {
            "totalEvents": 0,
            "totalEmailsSent": 0,
            "totalEmailsOpened": 0,
            "totalEmailsClicked": 0,
            "totalWorkflowsStarted": 0,
            "openRate": 0.0,
            "clickRate": 0.0,
        },
        "/activity/recent-count": {"count": 0, "minutes": 5},
        "/activity/types": {"types": []},
        "/activity/upcoming": {"activities": []},
    }[path]
    assert body == expected
    assert anon_client.get(path).status_code == 401


def test_filters_on_another_projects_contact_or_email_find_nothing(engaged, other_client):
    assert feed(other_client, contactId=str(engaged.contact_id))["data"] == []
    assert feed(other_client, emailId=str(engaged.id))["data"] == []


def test_a_page_costs_the_same_few_queries(secret_client, project, ann, django_assert_max_num_queries, settings):
    settings.API_KEY_CACHE_SECONDS = 300  # as with Redis in production: the key lookup is not the page's cost
    _events(project.project, ann, 50)
    secret_client.get("/activity")  # warms the key cache
    # Per source (the events, and what other apps register, such as campaigns): the page (contacts joined) and
    # the first page's count.
    sources = len(registry.activity_sources.implementations)
    with django_assert_max_num_queries(2 * sources):
        first = feed(secret_client, limit=100)
    cursor = feed(secret_client, limit=10)["cursor"]
    with django_assert_max_num_queries(sources):
        feed(secret_client, limit=10, cursor=cursor)
    assert len(first["data"]) == 50
