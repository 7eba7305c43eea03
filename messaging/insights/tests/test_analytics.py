"""Analytics through the HTTP API: the time series from the hourly rollup (kept by the events of a real send,
pixel and click, and by feedback events), its rebuild from the email rows, top events and campaign figures, the
body retention, bad input and isolation between projects."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from contacts.models import Contact, Event
from contacts.services import events_record_bulk
from core.time import iso
from messaging.feedback.tests.feedback import feedback_settings_fixture, generic_post  # noqa: F401 - fixture
from messaging.insights import registry
from messaging.insights.registry import CampaignDirectory, CampaignInfo
from messaging.insights.retention import email_bodies_clear
from messaging.insights.tests import test_activity
from messaging.models import Email, EmailStatsHour

# The end-to-end fixtures (a real send, two pixel loads and a click) of the activity tests.
engaged, hit = test_activity.engaged, test_activity.hit

pytestmark = pytest.mark.django_db
ZERO = {"emails": 0, "delivered": 0, "opens": 0, "clicks": 0, "bounces": 0, "complaints": 0}


def series(api, **params) -> list[dict]:
    response = api.get("/analytics/timeseries", params)
    assert response.status_code == 200, response.json()
    return response.json()


def midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def rollup() -> list[tuple]:
    return list(
        EmailStatsHour.objects.order_by("project_id", "hour").values_list(
            "project_id", "hour", "sent", "delivered", "opened", "clicked", "bounced", "complained", "failed"
        )
    )


def test_send_open_click_make_the_series(engaged, secret_client):
    points = series(secret_client)
    today = midnight(timezone.now())
    assert len(points) == 31 and points[0]["date"] == iso(today - timedelta(days=30))
    assert points[-1] == {"date": iso(today), **ZERO, "emails": 1, "opens": 1, "clicks": 1}
    assert all(point == {"date": point["date"], **ZERO} for point in points[:-1])

    hours = series(secret_client, interval="hour", startDate=today.date().isoformat())
    now_hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    assert len(hours) == now_hour.hour + 1 and hours[0]["date"] == iso(today)  # up to now
    [busy] = [point for point in hours if point["emails"]]
    assert busy == {"date": iso(now_hour), **ZERO, "emails": 1, "opens": 1, "clicks": 1}

    # The rebuild from the email rows finds exactly what the increments counted.
    before = rollup()
    call_command("rebuild_email_stats", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert rollup() == before


def test_provider_feedback_reaches_the_series(
    engaged, secret_client, feedback_settings, client, django_capture_on_commit_callbacks
):
    """Delivery and complaint notifications through the signed generic webhook, after the real send, open and
    click: the series shows them and agrees with a rebuild from the email row."""
    now = iso(timezone.now())
    events = [
        {"id": "d-1", "type": "delivered", "emailId": str(engaged.id), "timestamp": now},
        {"id": "c-1", "type": "complained", "emailId": str(engaged.id), "timestamp": now},
        {"id": "c-1", "type": "complained", "emailId": str(engaged.id), "timestamp": now},  # a replay
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = generic_post(client, events)
    assert response.status_code == 200
    today = series(secret_client)[-1]
    assert today == {**today, "emails": 1, "delivered": 1, "opens": 1, "clicks": 1, "complaints": 1, "bounces": 0}
    before = rollup()
    call_command("rebuild_email_stats", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert rollup() == before


def test_feedback_events_count_at_their_own_time(project, secret_client, django_capture_on_commit_callbacks):
    ann = Contact.objects.create(project=project.project, email="ann@example.test")
    email_id = uuid.uuid4()
    two_hours_ago = timezone.now() - timedelta(hours=2)
    items = [
        (ann, "email.delivery", {"deliveredAt": iso(two_hours_ago)}),
        (ann, "email.bounce", {"bounceType": "hard", "bouncedAt": iso(two_hours_ago)}),
        (ann, "email.bounce", {"bounceType": "soft", "bouncedAt": iso(two_hours_ago)}),  # sets no bounced_at
        (ann, "email.complaint", {"complainedAt": iso(timezone.now())}),
        (ann, "email.open", {"openedAt": iso(timezone.now()), "isFirstOpen": False}),  # a repeat: not counted
        (ann, "email.failed", {"error": "550"}),
        (ann, "signup", {}),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        events_record_bulk(project=project.project, items=items, email_ids=[email_id] * len(items))
    hours = series(secret_client, interval="hour", startDate=iso(two_hours_ago), endDate=iso(timezone.now()))
    assert len(hours) == 3
    assert hours[0] == {"date": hours[0]["date"], **ZERO, "delivered": 1, "bounces": 1}
    assert hours[-1] == {"date": hours[-1]["date"], **ZERO, "complaints": 1}
    assert EmailStatsHour.objects.get(hour=hours[-1]["date"].replace("Z", "+00:00")).failed == 1


def test_buckets_cover_whole_intervals_and_are_zero_filled(project, secret_client):
    def at(day, hour):
        return datetime(2026, 3, day, hour, tzinfo=UTC)

    EmailStatsHour.objects.bulk_create(
        [
            EmailStatsHour(project=project.project, hour=at(1, 3), sent=5, opened=2),
            EmailStatsHour(project=project.project, hour=at(1, 23), sent=1, bounced=1),
            EmailStatsHour(project=project.project, hour=at(3, 0), sent=7, clicked=3, delivered=6),
            EmailStatsHour(project=project.project, hour=at(4, 0), sent=100),  # after the range
        ]
    )
    days = series(secret_client, startDate="2026-03-01T15:00:00Z", endDate="2026-03-03T02:00:00Z")
    assert days == [
        {"date": "2026-03-01T00:00:00.000Z", **ZERO, "emails": 6, "opens": 2, "bounces": 1},
        {"date": "2026-03-02T00:00:00.000Z", **ZERO},
        {"date": "2026-03-03T00:00:00.000Z", **ZERO, "emails": 7, "delivered": 6, "clicks": 3},
    ]
    assert series(secret_client, startDate="2026-03-01", endDate="2026-03-03") == days  # dates: whole days
    # Offsets are instants: 05:30 on the 1st in India is 00:00 UTC; the buckets stay UTC days.
    assert series(secret_client, startDate="2026-03-01T05:30:00+05:30", endDate="2026-03-03T07:30:00+05:30") == days
    hours = series(secret_client, interval="hour", startDate="2026-03-01T22:30:00Z", endDate="2026-03-02T01:00:00Z")
    assert [(p["date"], p["emails"]) for p in hours] == [
        ("2026-03-01T22:00:00.000Z", 0),
        ("2026-03-01T23:00:00.000Z", 1),
        ("2026-03-02T00:00:00.000Z", 0),
        ("2026-03-02T01:00:00.000Z", 0),
    ]
    assert len(series(secret_client, startDate="2025-03-03", endDate="2026-03-03")) == 366


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ("startDate=2026-03-02&endDate=2026-03-01", 422, "endDate"),
        ("startDate=2025-01-01&endDate=2026-03-01", 422, "startDate"),
        ("startDate=2026-03-01&endDate=2026-03-09&interval=hour", 422, "interval"),
        ("startDate=2026-03-01T00:59:59Z&endDate=2026-03-08T01:00:00Z&interval=hour", 422, "interval"),
        ("interval=week", 422, "interval"),
        ("startDate=last-monday", 422, "startDate"),
        ("endDate=2026-13-01", 422, "endDate"),
    ],
)
def test_timeseries_bad_input(secret_client, query, status, field):
    response = secret_client.get(f"/analytics/timeseries?{query}")
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["errors"][0]["field"] == field


def test_hour_interval_accepts_seven_days_of_whole_hours(secret_client):
    points = series(secret_client, interval="hour", startDate="2026-03-01T00:00:00Z", endDate="2026-03-08T00:59:59Z")
    assert len(points) == 7 * 24 + 1
    week_ago = (timezone.now() - timedelta(days=7)).isoformat()
    assert len(series(secret_client, interval="hour", startDate=week_ago)) == 7 * 24 + 1


def test_rebuild_from_email_rows(project, other_project):
    base = datetime(2026, 2, 10, 9, 15, tzinfo=UTC)

    def email(persona, **fields):
        return Email.objects.create(
            project=persona.project,
            to_email="x@example.test",
            from_email="a@alice.test",
            subject="S",
            created_at=base,
            **fields,
        )

    email(project, sent_at=base, opened_at=base + timedelta(hours=1), clicked_at=base + timedelta(hours=1))
    email(project, sent_at=base, delivered_at=base, bounced_at=base + timedelta(days=1))
    email(project, status=Email.Status.FAILED, updated_at=base)
    email(other_project, sent_at=base, complained_at=base)
    # A stale row inside the range disappears; one outside it stays.
    EmailStatsHour.objects.create(project=project.project, hour=base.replace(hour=20), sent=99)
    EmailStatsHour.objects.create(project=project.project, hour=datetime(2026, 1, 1, tzinfo=UTC), sent=3)

    call_command(
        "rebuild_email_stats",
        "--start",
        "2026-02-10",
        "--end",
        "2026-02-12",
        f"--project={project.id}",
        stdout=open("/dev/null", "w"),  # noqa: SIM115
    )
    nine = base.replace(minute=0)
    assert rollup() == [
        (project.id, datetime(2026, 1, 1, tzinfo=UTC), 3, 0, 0, 0, 0, 0, 0),
        (project.id, nine, 2, 1, 0, 0, 0, 0, 1),
        (project.id, nine + timedelta(hours=1), 0, 0, 1, 1, 0, 0, 0),
        (project.id, nine + timedelta(days=1), 0, 0, 0, 0, 1, 0, 0),
    ]
    call_command("rebuild_email_stats", stdout=open("/dev/null", "w"))  # noqa: SIM115 - every project, all time
    assert (other_project.id, nine, 1, 0, 0, 0, 0, 1, 0) in rollup()


def test_top_events_with_trend(project, secret_client):
    ann = Contact.objects.create(project=project.project, email="ann@example.test")
    now = timezone.now()

    def events(name, count, days_ago):
        Event.objects.bulk_create(
            Event(project=project.project, contact=ann, name=name, created_at=now - timedelta(days=days_ago))
            for _ in range(count)
        )

    events("signup", 4, 1)
    events("signup", 2, 40)
    events("purchase", 3, 2)
    events("login", 1, 3)
    events("login", 4, 45)
    events("ancient", 9, 70)
    assert secret_client.get("/analytics/top-events").json() == [
        {"name": "signup", "count": 4, "trend": 100},
        {"name": "purchase", "count": 3, "trend": 100},
        {"name": "login", "count": 1, "trend": -75},
    ]
    assert [e["name"] for e in secret_client.get("/analytics/top-events?limit=1").json()] == ["signup"]
    # Over 7 days the 45-day-old logins are outside both periods: new this week.
    assert secret_client.get("/analytics/top-events?days=7").json()[2] == {"name": "login", "count": 1, "trend": 100}


@pytest.fixture
def campaign_emails(project):
    first, second = uuid.uuid4(), uuid.uuid4()
    now = timezone.now()
    rows = [
        (first, {"sent_at": now, "opened_at": now, "clicked_at": now}),
        (first, {"sent_at": now, "opened_at": now}),
        (first, {"sent_at": now}),
        (first, {"sent_at": now}),
        (second, {"sent_at": now}),
        (second, {"status": Email.Status.QUEUED}),
        (None, {"sent_at": now, "opened_at": now}),  # not a campaign's
    ]
    for campaign_id, fields in rows:
        Email.objects.create(
            project=project.project,
            campaign_id=campaign_id,
            to_email="x@example.test",
            from_email="a@alice.test",
            subject=f"Subject {campaign_id}",
            **{"status": Email.Status.SENT, **fields},
        )
    return first, second


@pytest.fixture
def directory(monkeypatch):
    """The campaign directories in force, put back after the test (the campaigns app registers one)."""
    monkeypatch.setattr(registry.campaign_directories, "implementations", {})
    return registry.campaign_directories


def test_top_campaigns_and_stats_from_the_emails(campaign_emails, secret_client, directory):
    """Without a campaigns app's directory, campaigns are only ids on the emails."""
    directory.register(CampaignDirectory())
    first, second = campaign_emails
    top = secret_client.get("/analytics/top-campaigns").json()
    assert top == [
        {
            "id": str(first),
            "name": None,
            "subject": f"Subject {first}",
            "sentCount": 4,
            "openedCount": 2,
            "clickedCount": 1,
            "openRate": 50.0,
            "clickRate": 25.0,
        },
        {
            "id": str(second),
            "name": None,
            "subject": f"Subject {second}",
            "sentCount": 1,
            "openedCount": 0,
            "clickedCount": 0,
            "openRate": 0.0,
            "clickRate": 0.0,
        },
    ]
    assert len(secret_client.get("/analytics/top-campaigns?limit=1").json()) == 1
    assert secret_client.get("/analytics/campaign-stats").json() == {
        "total": 2,
        "active": 1,  # one email still queued
        "completed": 1,
        "averageOpenRate": 40.0,
        "averageClickRate": 20.0,
    }


def test_campaign_directory_names_campaigns(campaign_emails, secret_client, directory):
    first, _ = campaign_emails

    class Directory(CampaignDirectory):
        def describe(self, *, project, campaign_ids):
            return {first: CampaignInfo(name="Spring sale", subject="Spring!", status="SENT")}

        def counts(self, *, project, since):
            return {"total": 5, "active": 2, "completed": 3}

    directory.register(Directory())
    top = secret_client.get("/analytics/top-campaigns").json()
    stats = secret_client.get("/analytics/campaign-stats").json()
    assert (top[0]["name"], top[0]["subject"], top[1]["name"]) == ("Spring sale", "Spring!", None)
    assert stats == {"total": 5, "active": 2, "completed": 3, "averageOpenRate": 40.0, "averageClickRate": 20.0}


@pytest.mark.parametrize(
    ("path", "empty"),
    [
        ("/analytics/top-events", []),
        ("/analytics/top-campaigns", []),
        (
            "/analytics/campaign-stats",
            {"total": 0, "active": 0, "completed": 0, "averageOpenRate": 0.0, "averageClickRate": 0.0},
        ),
    ],
)
def test_other_projects_see_nothing(engaged, campaign_emails, other_client, anon_client, secret_client, path, empty):
    assert secret_client.get(path).json() != empty
    assert other_client.get(path).json() == empty
    assert anon_client.get(path).status_code == 401


def test_other_projects_series_is_all_zero(engaged, other_client, anon_client):
    assert all(point == {"date": point["date"], **ZERO} for point in series(other_client))
    assert anon_client.get("/analytics/timeseries").status_code == 401


def test_retention_clears_old_bodies_and_keeps_the_counts(project, settings, engaged, secret_client):
    old = timezone.now() - timedelta(days=91)

    def email(status, created_at, html="<p>hi</p>", text=None):
        return Email.objects.create(
            project=project.project,
            to_email="x@example.test",
            from_email="a@alice.test",
            subject="S",
            html=html,
            text=text,
            status=status,
            created_at=created_at,
        )

    expired = [email(Email.Status.SENT, old - timedelta(minutes=i)) for i in range(3)]
    failed = email(Email.Status.FAILED, old)
    queued = email(Email.Status.QUEUED, old)
    recent = email(Email.Status.SENT, timezone.now() - timedelta(days=89))
    # A text part its sender wrote goes with the HTML; a text-only message (no HTML) is cleared too.
    written = email(Email.Status.SENT, old, text="hi")
    text_only = email(Email.Status.SENT, old, html="", text="hi")
    before = (series(secret_client), secret_client.get("/activity").json()["total"])

    assert email_bodies_clear(batch_size=2) == 6
    kept = {row[0]: row[1:] for row in Email.objects.values_list("id", "html", "text")}
    assert all(kept[e.id] == ("", None) for e in [*expired, failed, written, text_only])
    assert kept[queued.id] == kept[recent.id] == ("<p>hi</p>", None)
    assert kept[engaged.id]  # sent today
    assert (series(secret_client), secret_client.get("/activity").json()["total"]) == before
    assert email_bodies_clear(batch_size=2) == 0


def test_rollup_admin_is_read_only(engaged, admin_client):
    page = admin_client.get("/admin/messaging/emailstatshour/")
    assert page.status_code == 200 and "Alice" in page.content.decode()
    row = EmailStatsHour.objects.get()
    assert admin_client.get("/admin/messaging/emailstatshour/add/").status_code == 403
    assert (
        admin_client.get(f"/admin/messaging/emailstatshour/?project__id__exact={engaged.project_id}").status_code == 200
    )
    assert admin_client.post(f"/admin/messaging/emailstatshour/{row.id}/delete/", {"post": "yes"}).status_code == 403
