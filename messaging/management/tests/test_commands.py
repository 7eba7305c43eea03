"""Operator commands of messaging: retry_emails, suppression, disable_project and enable_project."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from accounts.models import Project
from conftest import client_with
from messaging.models import Email, ReputationReview, Suppression

pytestmark = pytest.mark.django_db


def run(*args, capture=None) -> str:
    out = StringIO()
    if capture is None:
        call_command(*args, stdout=out)
    else:
        with capture(execute=True):
            call_command(*args, stdout=out)
    return out.getvalue()


def failed_sends(client, capture, smtp_sink, to, sender):
    smtp_sink.reply_to_rcpt = "550 no"
    with capture(execute=True):
        client.post("/v1/send", {"to": to, "from": sender, "subject": "S", "body": "<p>B</p>"}, format="json")
    smtp_sink.reply_to_rcpt = None


def test_retry_emails_queues_recent_failures_once(
    project, other_project, secret_client, smtp_sink, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    failed_sends(secret_client, capture, smtp_sink, ["ann@example.test", "bob@example.test"], "hi@alice.test")
    # /v1/send takes the secret key only, whatever credentials the other project's dashboard client carries.
    failed_sends(client_with(other_project.keys.secret_key), capture, smtp_sink, ["cid@example.test"], "hi@bob.test")
    old = Email.objects.get(to_email="bob@example.test")
    Email.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(hours=30))
    assert set(Email.objects.values_list("status", flat=True)) == {"FAILED"}
    args = ("retry_emails", "--status", "FAILED", "--since", "24h", "--project", str(project.id), "--json")

    assert json.loads(run(*args, "--dry-run"))["queued"] == 1
    assert set(Email.objects.values_list("status", flat=True)) == {"FAILED"}
    assert json.loads(run(*args, capture=capture))["queued"] == 1
    statuses = dict(Email.objects.values_list("to_email", "status"))
    assert statuses == {"ann@example.test": "SENT", "bob@example.test": "FAILED", "cid@example.test": "FAILED"}
    assert [message.rcpt_tos for message in smtp_sink.received] == [["ann@example.test"]]
    assert json.loads(run(*args, capture=capture))["queued"] == 0  # nothing left to retry

    assert "Queued 1 failed email(s)" in run(
        "retry_emails", "--since", "2d", "--project", str(project.id), capture=capture
    )
    assert Email.objects.get(pk=old.pk).status == "SENT"
    assert Email.objects.get(to_email="cid@example.test").status == "FAILED"  # the other project's


def test_retry_emails_refuses_a_bad_span(db):
    with pytest.raises(CommandError, match="30x"):
        call_command("retry_emails", "--since", "30x")


def test_suppression_add_list_remove(project, other_project):
    scope = ("--project", str(project.id))
    out = json.loads(run("suppression", "add", "Ann@Example.test", "bob@example.test", *scope, "--json", "--dry-run"))
    assert out == {"dryRun": True, "addresses": {"ann@example.test": "added", "bob@example.test": "added"}}
    assert not Suppression.objects.exists()
    assert (
        run("suppression", "add", "ann@example.test", *scope, "--reason", "asked by phone")
        == "ann@example.test: added\n"
    )
    assert "already suppressed (MANUAL)" in run("suppression", "add", "ann@example.test", *scope)
    row = Suppression.objects.get()
    assert (row.project_id, row.reason, row.detail) == (project.id, "MANUAL", "asked by phone")

    listed = json.loads(run("suppression", "list", *scope, "--json"))
    assert [(entry["email"], entry["reason"]) for entry in listed] == [("ann@example.test", "MANUAL")]
    assert json.loads(run("suppression", "list", "--project", str(other_project.id), "--json")) == []
    assert "not suppressed" in run("suppression", "remove", "ann@example.test", "--project", str(other_project.id))
    assert Suppression.objects.exists()

    assert run("suppression", "remove", "ann@example.test", *scope) == "ann@example.test: removed\n"
    assert run("suppression", "remove", "ann@example.test", *scope) == "ann@example.test: not suppressed\n"
    assert not Suppression.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "not-an-address"), '"not-an-address" is not an email address'),
        (("remove",), "remove needs at least one address"),
    ],
)
def test_suppression_refuses_bad_input(project, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("suppression", *args, "--project", str(project.id))
    assert not Suppression.objects.exists()


def test_disable_and_enable_a_project(project, other_project):
    scope = ("--project", str(project.id))
    client = client_with(project.keys.secret_key)
    assert "Would disable" in run("disable_project", *scope, "--dry-run")
    assert client.get("/contacts").status_code == 200
    assert "reason ABUSE" in run("disable_project", *scope, "--reason", "ABUSE")
    assert client.get("/contacts").json()["error"]["code"] == "PROJECT_DISABLED"
    assert json.loads(run("disable_project", *scope, "--json"))["changed"] is False
    assert Project.objects.get(pk=project.id).disabled_reason == "ABUSE"
    assert client_with(other_project.keys.secret_key).get("/contacts").status_code == 200

    assert "Would enable" in run("enable_project", *scope, "--dry-run")
    assert "Enabled" in run("enable_project", *scope, "--reason", "checked the list")
    assert client.get("/contacts").status_code == 200
    assert ReputationReview.objects.filter(project_id=project.id).exists()  # figures count from now on
    assert json.loads(run("enable_project", *scope, "--json"))["changed"] is False


@pytest.mark.parametrize("command", ["disable_project", "enable_project", "suppression"])
def test_an_unknown_project_is_refused(db, command):
    args = ("list",) if command == "suppression" else ()
    with pytest.raises(CommandError, match=r'^Project "x" not found$'):
        call_command(command, *args, "--project", "x")
