"""The operators' dashboard (/admin/dashboard/): staff only, the figures an operator reads, and the same few queries
whatever the size of the tables."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.tenancy.services import project_disable
from campaigns.models import Campaign, CampaignStatus
from conftest import make_persona
from messaging.feedback.reputation import DISABLED_REASON
from messaging.models import Email

pytestmark = pytest.mark.django_db
URL = "/admin/dashboard/"


def _emails(persona, count: int, status: str, **fields) -> None:
    Email.objects.bulk_create(
        Email(
            project=persona.project,
            to_email=f"r{index}@example.test",
            from_email="a@alice.test",
            subject="S",
            status=status,
            **fields,
        )
        for index in range(count)
    )


def _row(html: str, table: str, label: str) -> str:
    """The second cell of the row whose first cell is `label`, in the table with this id."""
    body = re.search(rf'<table id="{table}">(.*?)</table>', html, re.S).group(1)
    return re.search(rf"<tr><td>{re.escape(label)}</td><td>([^<]*)</td></tr>", body).group(1)


def test_staff_see_what_waits_flows_and_is_stuck(admin_client, project, other_project):
    now = timezone.now()
    _emails(project, 3, Email.Status.QUEUED)
    _emails(other_project, 2, Email.Status.SENT, claimed_at=now - timedelta(seconds=5), sent_at=now)
    _emails(project, 1, Email.Status.SENT, claimed_at=now - timedelta(minutes=3), sent_at=now - timedelta(minutes=3))
    _emails(project, 1, Email.Status.SENDING, claimed_at=now - timedelta(hours=2))  # stuck past its lease
    _emails(project, 4, Email.Status.DELIVERED, created_at=now - timedelta(hours=3))  # before the last hour
    Campaign.objects.create(
        project=project.project,
        name="Late",
        subject="S",
        body="B",
        from_email="a@alice.test",
        status=CampaignStatus.SCHEDULED,
        scheduled_for=now - timedelta(hours=1),
    )
    guarded = make_persona("Spammy", "spam@example.test")
    project_disable(project=guarded.project, reason=DISABLED_REASON)
    project_disable(project=make_persona("Unpaid", "unpaid@example.test").project, reason="BILLING")

    response = admin_client.get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    assert _row(html, "queues", "email(s) queued") == "3"
    assert _row(html, "emails-by-status", "QUEUED") == "3"
    assert _row(html, "emails-by-status", "SENT") == "3"  # both projects
    assert _row(html, "emails-by-status", "SENDING") == "1"
    assert _row(html, "emails-by-status", "DELIVERED") == "0"  # accepted three hours ago
    assert "(3 in all)" in html  # deliveries of the last 15 minutes
    assert f"<td>{now:%H:%M}</td><td>2</td>" in html
    assert _row(html, "overdue", "email(s) SENDING past their lease") == "1"
    assert _row(html, "overdue", "scheduled campaign(s) past their time") == "1"
    assert _row(html, "overdue", "workflow execution(s) waiting past their resume time") == "0"
    assert "Projects disabled by the reputation guard (1)" in html
    assert "Spammy" in html and "Unpaid" not in html  # disabled for another reason


def test_the_admin_index_links_to_it(admin_client):
    assert URL.encode() in admin_client.get("/admin/").content


def test_people_who_are_not_staff_are_sent_to_the_login(client, project):
    assert client.get(URL).status_code == 302
    client.login(username=project.owner_email, password="correct horse battery")
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_the_same_few_queries_however_many_emails(admin_client, project, django_assert_max_num_queries):
    now = timezone.now()

    def queries_for_a_page() -> int:
        with CaptureQueriesContext(connection) as captured, django_assert_max_num_queries(16):
            assert admin_client.get(URL).status_code == 200
        return len(captured)

    _emails(project, 5, Email.Status.SENT, claimed_at=now, sent_at=now)
    few = queries_for_a_page()
    _emails(project, 500, Email.Status.SENT, claimed_at=now, sent_at=now)
    _emails(project, 500, Email.Status.QUEUED)
    assert queries_for_a_page() == few
