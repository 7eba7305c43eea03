"""`recompute_segments`: entries and exits with their events, counts, a dry run, a second run that moves nothing."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from contacts.models import Contact, Event
from segments.models import Segment, SegmentMembership
from segments.tests.test_api_segments import create

pytestmark = pytest.mark.django_db


def recompute(*args) -> list[dict]:
    out = StringIO()
    call_command("recompute_segments", "--json", *args, stdout=out)
    return {entry["name"]: entry for entry in json.loads(out.getvalue())}


def test_tracked_segments_record_moves_once(secret_client, other_client, project, other_project):
    tracked = create(secret_client, name="Tracked", trackMembership=True).json()
    create(secret_client, name="Plain")
    create(other_client, name="Theirs", trackMembership=True)
    ann = Contact.objects.create(project=project.project, email="ann@example.test", data={"plan": "pro"})
    Contact.objects.create(project=other_project.project, email="bob@example.test", data={"plan": "pro"})
    scope = ("--project", str(project.id))

    preview = recompute(*scope, "--dry-run")
    assert set(preview) == {"Tracked", "Plain"}
    assert (preview["Tracked"]["added"], preview["Tracked"]["removed"], preview["Tracked"]["total"]) == (1, 0, 1)
    assert not SegmentMembership.objects.exists() and not Event.objects.exists()

    done = recompute(*scope)
    assert (done["Tracked"]["added"], done["Tracked"]["total"], done["Plain"]["total"]) == (1, 1, 1)
    assert list(Event.objects.values_list("name", "contact__email")) == [("segment.tracked.entry", ann.email)]
    assert recompute(*scope)["Tracked"] == {**done["Tracked"], "added": 0}  # a second run moves nothing
    assert Event.objects.count() == 1
    assert Segment.objects.get(name="Theirs").member_count == 0  # never recomputed: another project's

    Contact.objects.filter(pk=ann.pk).update(data={"plan": "free"}, updated_at=timezone.now())
    only = recompute("--segment", tracked["id"])
    assert list(only) == ["Tracked"] and (only["Tracked"]["removed"], only["Tracked"]["total"]) == (1, 0)
    assert Event.objects.filter(name="segment.tracked.exit").count() == 1


def test_text_output_and_a_busy_segment(secret_client, project):
    segment = create(secret_client, name="Tracked", trackMembership=True).json()
    Segment.objects.filter(pk=segment["id"]).update(claimed_at=timezone.now())
    out = StringIO()
    with pytest.raises(CommandError) as busy:
        call_command("recompute_segments", "--project", str(project.id), stdout=out)
    assert busy.value.returncode == 2 and "busy" in out.getvalue()


def test_unknown_segment_or_project(secret_client, other_client, project):
    theirs = create(other_client, name="Theirs").json()
    with pytest.raises(CommandError, match=f'Segment "{theirs["id"]}" not found'):
        call_command("recompute_segments", "--segment", theirs["id"], "--project", str(project.id))
    with pytest.raises(CommandError, match=r'^Project "x" not found$'):
        call_command("recompute_segments", "--project", "x")
