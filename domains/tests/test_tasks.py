"""The periodic check: which domains it picks and what a run does."""

from datetime import timedelta

from django.utils import timezone

from domains.models import Domain
from domains.selectors import domains_due_for_check
from domains.services import domain_create
from domains.tasks import domain_check_task, domains_check_due


def test_due_domains_are_pending_ones_and_stale_verified_ones_bounded(project, settings):
    now = timezone.now()
    fresh = domain_create(project=project.project, name="fresh.example")
    checked = domain_create(project=project.project, name="checked.example")
    Domain.objects.filter(pk=checked.pk).update(last_checked_at=now - timedelta(seconds=10))
    alice = Domain.objects.get(name="alice.test")  # verified, never checked
    recent = domain_create(project=project.project, name="recent.example")
    Domain.objects.filter(pk=recent.pk).update(status="verified", last_checked_at=now - timedelta(minutes=5))

    assert domains_due_for_check(now=now) == [fresh.pk, alice.pk]
    assert domains_due_for_check(now=now, limit=1) == [fresh.pk]
    settings.DOMAINS_VERIFIED_RECHECK_MINUTES = 1
    assert set(domains_due_for_check(now=now)) == {fresh.pk, alice.pk, recent.pk}


def test_run_verifies_published_domains(project, dns_zone):
    domain = domain_create(project=project.project, name="published.example")
    dns_zone[(f"{domain.dkim_selector}._domainkey.published.example", "TXT")] = [
        f"v=DKIM1; k=rsa; p={domain.dkim_public_key}"
    ]
    assert domains_check_due() == 2  # eager Celery in tests: published.example and alice.test
    domain.refresh_from_db()
    assert domain.status == "verified" and domain.last_checked_at is not None


def test_a_domain_checked_a_moment_ago_is_not_checked_again(project, dns_server):
    domain = domain_create(project=project.project, name="busy.example")
    domain_check_task(str(domain.pk))
    assert len(dns_server.queries) == 2  # DKIM and DMARC
    domain_check_task(str(domain.pk))
    assert len(dns_server.queries) == 2


def test_deleted_domain_is_skipped(project, dns_server):
    domain = domain_create(project=project.project, name="gone.example")
    pk = str(domain.pk)
    domain.delete()
    domain_check_task(pk)
    assert dns_server.queries == []


def test_beat_entry_runs_every_five_minutes():
    from config.schedule import BEAT_SCHEDULE

    entry = BEAT_SCHEDULE["check-sender-domains"]
    assert entry["task"] == "domains.tasks.domains_check_due"
    assert entry["schedule"] == timedelta(minutes=5)
    assert entry["options"]["expires"] <= 5 * 60
