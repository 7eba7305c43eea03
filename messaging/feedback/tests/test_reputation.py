"""The reputation guard: bounce and complaint reports arriving over the webhook disable a project past the
thresholds of docs/feedback.md, and the API then answers 403."""

import logging
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from messaging.feedback.reputation import project_reputation
from messaging.feedback.tests.feedback import feedback_settings_fixture, generic_post  # noqa: F401 - fixture
from messaging.insights.rollup import email_stats_rebuild
from messaging.models import Email

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("feedback_settings")]


def sent_emails(project, count: int, *, sent_at=None) -> list[Email]:
    sent_at = sent_at or timezone.now()
    emails = [
        Email(
            id=uuid.uuid4(),
            project=project,
            to_email=f"r{index}@example.test",
            from_email="news@alice.test",
            subject="Hi",
            status=Email.Status.SENT,
            sent_at=sent_at,
        )
        for index in range(count)
    ]
    created = Email.objects.bulk_create(emails)
    # Rows made here, not through delivery: bring the rollup (which the guard reads sent counts from) up to date.
    email_stats_rebuild(start=sent_at - timedelta(hours=1), end=timezone.now(), project_id=project.id)
    return created


def report(client, emails, kind="bounced"):
    events = [
        {"id": f"{kind}-{email.id}", "type": kind, "emailId": str(email.id), "bounceType": "hard"} for email in emails
    ]
    response = generic_post(client, events)
    assert response.status_code == 200
    return response


def test_eleven_percent_bounces_disable_the_project(client, project, other_project, secret_client, other_client):
    emails = sent_emails(project.project, 110)
    sent_emails(other_project.project, 110)
    report(client, emails[:10])
    project.project.refresh_from_db()
    assert project.project.disabled is False, "10 of 110 (9.1 %) is a warning"
    assert secret_client.get("/contacts").status_code == 200

    report(client, emails[10:12])

    project.project.refresh_from_db()
    assert project.project.disabled is True
    assert project.project.disabled_reason == "EMAIL_REPUTATION"
    assert project.project.disabled_at is not None
    response = secret_client.get("/contacts")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "PROJECT_DISABLED"
    assert other_client.get("/contacts").status_code == 200
    reputation = project_reputation(project=project.project)
    assert reputation["state"] == "critical"
    assert reputation["window"] | {"since": None} == {
        "days": 7,
        "since": None,
        "sent": 110,
        "bounces": 12,
        "complaints": 0,
        "bounceRate": 10.909,
        "complaintRate": 0.0,
    }


def test_with_auto_disable_off_a_critical_project_is_only_logged(client, project, settings, caplog):
    settings.REPUTATION_AUTO_DISABLE = False
    emails = sent_emails(project.project, 100)
    with caplog.at_level(logging.WARNING, logger="messaging.feedback.reputation"):
        report(client, emails[:15])
    project.project.refresh_from_db()
    assert project.project.disabled is False
    assert "email reputation is critical" in caplog.text


def test_rates_need_a_hundred_emails(client, project):
    emails = sent_emails(project.project, 60)
    report(client, emails[:30])
    project.project.refresh_from_db()
    assert project.project.disabled is False
    reputation = project_reputation(project=project.project)
    assert (reputation["state"], reputation["window"]["bounceRate"]) == ("ok", None)


def test_twenty_five_complaints_in_a_day_disable_whatever_the_volume(client, project):
    emails = sent_emails(project.project, 30)
    report(client, emails[:24], kind="complained")
    project.project.refresh_from_db()
    assert project.project.disabled is False
    report(client, emails[24:25], kind="complained")
    project.project.refresh_from_db()
    assert project.project.disabled is True
    assert project_reputation(project=project.project)["last24Hours"] == {"bounces": 0, "complaints": 25}


def test_a_warning_and_the_window(client, project):
    week_old = timezone.now() - timedelta(days=8)
    old = sent_emails(project.project, 200, sent_at=week_old)
    Email.objects.filter(id__in=[e.id for e in old[:50]]).update(bounced_at=week_old, status=Email.Status.BOUNCED)
    emails = sent_emails(project.project, 200)
    report(client, emails[:12])
    reputation = project_reputation(project=project.project)
    assert reputation["state"] == "warning"
    assert reputation["window"]["sent"] == 200
    assert reputation["window"]["bounceRate"] == 6.0
    assert reputation["reasons"] == ["bounce rate 6.0% over 7 days (warning)"]
    assert reputation["thresholds"]["bounceRate"] == {"warning": 5.0, "critical": 10.0}
    project.project.refresh_from_db()
    assert project.project.disabled is False


def test_operator_sees_the_figures_and_re_enables(client, admin_client, project, secret_client):
    emails = sent_emails(project.project, 100)
    report(client, emails[:20])
    page = admin_client.get("/admin/messaging/projectreputation/").content.decode()
    assert "EMAIL_REPUTATION" in page and "20.0" in page
    detail = admin_client.get(f"/admin/messaging/projectreputation/{project.id}/change/").content.decode()
    assert "bounce rate 20.0% over 7 days (critical)" in detail

    admin_client.post("/admin/messaging/projectreputation/", {"action": "enable", "_selected_action": [project.id]})
    project.project.refresh_from_db()
    assert project.project.disabled is False
    assert secret_client.get("/contacts").status_code == 200
    # The next bounce of the mail already sent does not disable it again: figures count from the re-enable on.
    report(client, emails[20:21])
    project.project.refresh_from_db()
    assert project.project.disabled is False
    assert project_reputation(project=project.project)["window"]["bounces"] == 1
