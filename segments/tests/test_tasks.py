"""The periodic refresh: counts refreshed, tracked segments recomputed, stale ones first, claims respected."""

from datetime import timedelta

from django.utils import timezone

from contacts.models import Contact, Event
from segments.models import Segment
from segments.services import segment_recompute
from segments.tasks import segments_refresh_due_task
from segments.tests.test_api_segments import create


def test_periodic_run_recounts_and_recomputes(secret_client, other_client, project):
    plain = create(secret_client, name="Plain").json()
    tracked = create(secret_client, name="Tracked", trackMembership=True).json()
    theirs = create(other_client, name="Theirs").json()
    Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "pro"})

    assert segments_refresh_due_task() == 3
    counts = {str(pk): count for pk, count in Segment.objects.values_list("id", "member_count")}
    assert (counts[plain["id"]], counts[tracked["id"]], counts[theirs["id"]]) == (1, 1, 0)
    assert list(Event.objects.values_list("name", flat=True)) == ["segment.tracked.entry"]
    assert not Segment.objects.filter(refreshed_at=None).exists()
    assert not Segment.objects.exclude(claimed_at=None).exists()

    # Refreshed within the interval: nothing is due.
    assert segments_refresh_due_task() == 0


def test_a_claimed_segment_is_skipped_until_its_claim_expires(secret_client, project):
    segment = create(secret_client).json()
    Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "pro"})
    Segment.objects.filter(pk=segment["id"]).update(claimed_at=timezone.now())
    assert segment_recompute(segment_id=segment["id"]) is None
    assert Segment.objects.get(pk=segment["id"]).member_count == 0
    Segment.objects.filter(pk=segment["id"]).update(claimed_at=timezone.now() - timedelta(hours=1))
    assert segment_recompute(segment_id=segment["id"]).total == 1
    assert Segment.objects.get(pk=segment["id"]).member_count == 1


def test_batches_are_bounded_and_stalest_first(secret_client, settings):
    settings.SEGMENT_REFRESH_BATCH = 1
    old = create(secret_client, name="Old").json()
    new = create(secret_client, name="New").json()
    long_ago = timezone.now() - timedelta(hours=2)
    Segment.objects.filter(pk=old["id"]).update(refreshed_at=long_ago)
    Segment.objects.filter(pk=new["id"]).update(refreshed_at=long_ago + timedelta(minutes=30))
    assert segments_refresh_due_task() == 1
    assert Segment.objects.get(pk=old["id"]).refreshed_at > long_ago + timedelta(hours=1)
    assert Segment.objects.get(pk=new["id"]).refreshed_at < long_ago + timedelta(hours=1)
