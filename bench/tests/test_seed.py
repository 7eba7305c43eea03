"""bench/seed.py writes rows that Herald's own API reads as a project's: counts, segments, analytics and campaign
figures answer what the seeded shares say, and what Herald derives from the rows (hourly stats, campaign counters,
body retention) agrees with a recount."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count, Q

from bench import seed as seeding
from contacts.models import Event
from messaging.insights.retention import email_bodies_clear
from messaging.models import Email

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="bench/seed.py loads rows with PostgreSQL's COPY"),
    # The rows are written on connections of their own, which must see the committed project.
    pytest.mark.django_db(transaction=True),
]

CONTACTS, EVENTS, EMAILS = 3000, 30000, 6000


def test_a_seeded_project_reads_as_herald_wrote_it(project, secret_client):
    # One seeding for every check: each is a part of what the API must answer on the same rows.
    schema = schema_objects()
    figures = seeding.seed(project=project.project, contacts=CONTACTS, events=EVENTS, emails=EMAILS, seed=7)
    # Nothing the migrations did not make, but the past months' partitions (and their indexes) in place of the
    # one partition of everything before next month.
    made = tuple(figures["partitions_made"])
    assert months_back(made) >= 13  # the seeded year, a month more when it starts late in one
    assert [o for o in schema_objects() if not o[0].startswith(made)] == [o for o in schema if "_before_" not in o[0]]
    contacts_as_the_api_lists_them(secret_client)
    events_have_time_ordered_ids_and_skewed_names(secret_client)
    a_segment_on_an_event_counts_the_contacts_of_its_events(secret_client)
    analytics_answer_the_seeded_shares(secret_client)
    campaign_figures_are_their_emails(secret_client)
    bodies_are_as_retention_leaves_them()


def months_back(partitions: tuple[str, ...]) -> int:
    """How many of the partitions made lie before this month: the seeded year's."""
    this_month = f"{datetime.now(UTC):%Y%m}"
    return sum(name.rsplit("_", 1)[1] <= this_month for name in partitions)


def schema_objects() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1")
        return cursor.fetchall()


def get(client, path: str):
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.json()


def near(value: float, expected: float, tolerance: float) -> bool:
    return abs(value - expected) <= tolerance


def contacts_as_the_api_lists_them(secret_client):
    assert get(secret_client, "/contacts")["total"] == CONTACTS
    subscribed = get(secret_client, "/contacts?subscribed=true")["total"]
    assert near(subscribed / CONTACTS, 230 / 256, 0.03)
    contact = get(secret_client, "/contacts?pageSize=1")["data"][0]
    assert {"firstName", "lastName", "plan", "country", "newsletter"} <= contact["data"].keys()
    fields = {row["field"]: row["type"] for row in get(secret_client, "/contacts/fields")["fields"]}
    expected = {"plan": "string", "age": "number", "ltv": "number", "newsletter": "boolean"}
    assert {f"data.{key}": kind for key, kind in expected.items()}.items() <= fields.items()
    # Signups over the last two years, fewer at first (the first of 3,000 comes about ten days in).
    oldest = get(secret_client, "/contacts?sort=created_at&dir=asc&pageSize=1")["data"][0]["createdAt"]
    assert near((datetime.now(UTC) - datetime.fromisoformat(oldest)).days, seeding.CONTACT_DAYS - 10, 5)


def events_have_time_ordered_ids_and_skewed_names(secret_client):
    page = get(secret_client, "/events?limit=100")
    assert page["total"] == Event.objects.count()
    assert near(page["total"], EVENTS, EVENTS * 0.05)
    for event in page["data"]:
        event_id = uuid.UUID(event["id"])
        assert event_id.version == 7
        created = datetime.fromisoformat(event["createdAt"].replace("Z", "+00:00"))
        assert event_id.int >> 80 == int(created.timestamp() * 1000)
    stats = {row["name"]: row for row in get(secret_client, "/events/stats?days=3650")}
    assert sum(row["count"] for row in stats.values()) == page["total"]
    # Zipf: the first tracked name about twice the second.
    assert near(stats["page.view"]["count"] / stats["session.start"]["count"], 2, 0.4)
    # Nothing happened after now, emails included (a send comes seconds after its email).
    now = datetime.now(UTC)
    assert not Event.objects.filter(created_at__gt=now).exists()
    assert not Email.objects.filter(Q(updated_at__gt=now) | Q(sent_at__gt=now) | Q(delivered_at__gt=now)).exists()
    # Every sent email has its email.sent event, linked to it.
    sent = Email.objects.filter(sent_at__isnull=False).count()
    assert stats["email.sent"]["count"] == sent
    linked = Event.objects.filter(name="email.sent", email_id__isnull=False).values("email_id").distinct().count()
    assert linked == sent
    # Activity is skewed: a tenth of the contacts record a good share of the tracked events.
    per_contact = list(
        Event.objects.filter(email_id__isnull=True)
        .values("contact")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    top = sorted(per_contact, reverse=True)[: CONTACTS // 10]
    assert sum(top) / sum(per_contact) > 0.35


def a_segment_on_an_event_counts_the_contacts_of_its_events(secret_client):
    condition = {"logic": "AND", "groups": [{"filters": [{"field": "event.purchase", "operator": "triggered"}]}]}
    response = secret_client.post("/segments", {"name": "Buyers", "condition": condition}, format="json")
    assert response.status_code == 201, response.content
    stats = {row["name"]: row for row in get(secret_client, "/events/stats?days=3650")}
    assert 0 < response.json()["memberCount"] == stats["purchase"]["uniqueContacts"] < CONTACTS


def analytics_answer_the_seeded_shares(secret_client):
    figures = get(secret_client, "/activity/stats?days=366")
    emails = Email.objects.count()
    assert near(emails, EMAILS, EMAILS * 0.02)
    assert figures["totalEmailsSent"] == Email.objects.filter(sent_at__isnull=False).count()
    assert near(figures["totalEmailsSent"] / emails, 1 - seeding.FAILED, 0.01)
    share = seeding.MARKETING_SHARE
    delivered = (1 - seeding.BOUNCED) * seeding.DELIVERED
    opened = delivered * (share * seeding.OPENED["MARKETING"] + (1 - share) * seeding.OPENED["TRANSACTIONAL"])
    assert near(figures["openRate"], 100 * opened, 3)
    # The daily series is the hourly stats, which must equal a recount of the rows.
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    series = get(secret_client, "/analytics/timeseries")
    assert (
        sum(point["emails"] for point in series) == Email.objects.filter(sent_at__gte=day - timedelta(days=30)).count()
    )
    assert (
        sum(point["opens"] for point in series) == Email.objects.filter(opened_at__gte=day - timedelta(days=30)).count()
    )
    statuses = dict(Email.objects.values_list("status").annotate(n=Count("id")))
    assert statuses["OPENED"] + statuses["CLICKED"] == Email.objects.filter(opened_at__isnull=False).count() - (
        Email.objects.filter(status="COMPLAINED", opened_at__isnull=False).count()
    )


def campaign_figures_are_their_emails(secret_client):
    campaigns = get(secret_client, "/campaigns?pageSize=100")["data"]
    # A campaign a week, each one's emails under its id.
    assert len(campaigns) == Email.objects.filter(campaign_id__isnull=False).values("campaign_id").distinct().count()
    assert len(campaigns) >= 50
    campaign = campaigns[0]
    stats = get(secret_client, f"/campaigns/{campaign['id']}/stats")
    rows = Email.objects.filter(campaign_id=campaign["id"]).aggregate(
        sent=Count("sent_at"), opened=Count("opened_at"), subscribed=Count("id", filter=Q(contact__subscribed=True))
    )
    assert stats["sentCount"] == rows["sent"] > 0
    assert stats["openedCount"] == rows["opened"]
    assert rows["subscribed"] == Email.objects.filter(campaign_id=campaign["id"]).count()  # only to the subscribed


def bodies_are_as_retention_leaves_them():
    assert email_bodies_clear(dry_run=True) == 0
    recent = Email.objects.filter(created_at__gte=datetime.now(UTC) - timedelta(days=30))
    assert recent.exists() and not recent.filter(html="").exists()
