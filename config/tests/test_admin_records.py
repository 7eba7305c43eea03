"""History is read-only in the admin: emails, events, jobs, executions and the providers' events are records of what
happened. A superuser can read each one, and can neither add, edit nor delete it by hand; the actions that change
their state through the services (queue an email again, cancel an execution) still run for whoever may change the
model."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import Client

from accounts.billing.models import ProviderEvent, UsageWarning
from accounts.identity.users import user_get_or_create
from accounts.models import IdempotencyRecord, Job
from conftest import PASSWORD
from contacts.models import Event
from core.admin import RecordAdmin
from messaging.models import AttachmentBundle, Email, EmailStatsHour, WebhookReceipt
from workflows.models import RefusedStart, WorkflowExecution

pytestmark = pytest.mark.django_db

HISTORY = {
    Email, Event, Job, WorkflowExecution, WebhookReceipt, ProviderEvent, UsageWarning, EmailStatsHour, RefusedStart,
    IdempotencyRecord, AttachmentBundle,
}  # fmt: skip


def _url(model, suffix: str = "") -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/{suffix}"


def test_every_page_of_history_is_a_record_page():
    records = {model for model, model_admin in admin.site._registry.items() if isinstance(model_admin, RecordAdmin)}
    assert records >= HISTORY


@pytest.mark.parametrize("model", sorted(HISTORY, key=lambda model: model._meta.label), ids=lambda m: m._meta.label)
def test_a_superuser_reads_a_record_and_cannot_add_edit_or_delete_it(admin_client, model):
    listed = admin_client.get(_url(model))
    assert listed.status_code == 200
    assert listed.context["has_add_permission"] is False
    offered = (
        [name for name, _ in listed.context["action_form"].fields["action"].choices]
        if listed.context.get("action_form")
        else []
    )
    assert "delete_selected" not in offered
    assert admin_client.get(_url(model, "add/")).status_code == 403


def test_an_email_is_shown_without_a_form_and_queued_again_by_its_action(admin_client, project):
    email = Email.objects.create(
        project=project.project, to_email="ann@example.test", subject="Hi", html="<p>Hi</p>", status="FAILED"
    )
    page = admin_client.get(_url(Email, f"{email.pk}/change/"))
    assert page.status_code == 200
    assert b'name="_save"' not in page.content and b"ann@example.test" in page.content
    # A post to the page changes nothing; deleting is refused.
    admin_client.post(_url(Email, f"{email.pk}/change/"), {"to_email": "eve@example.test", "_save": "Save"})
    assert Email.objects.get(pk=email.pk).to_email == "ann@example.test"
    assert admin_client.post(_url(Email, f"{email.pk}/delete/"), {"post": "yes"}).status_code == 403
    assert Email.objects.filter(pk=email.pk).exists()

    queued = admin_client.post(_url(Email), {"action": "retry_now", "_selected_action": [email.pk]}, follow=True)
    assert "Queued 1 email(s)" in [str(message) for message in queued.context["messages"]]


def test_the_actions_ask_for_the_change_permission(project):
    user, _ = user_get_or_create(email="operator@example.test", password=PASSWORD)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    user.user_permissions.add(Permission.objects.get(codename="view_email"))
    client = Client()
    client.force_login(user)

    def offered() -> list[str]:
        form = client.get(_url(Email)).context["action_form"]
        return [name for name, _ in form.fields["action"].choices] if form else []

    assert "retry_now" not in offered()
    user.user_permissions.add(Permission.objects.get(codename="change_email"))
    client.force_login(user)
    assert "retry_now" in offered()
