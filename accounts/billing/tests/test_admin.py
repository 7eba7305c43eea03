"""The project's admin page shows and edits the caps, with the month's usage; warnings and provider events list."""

import pytest

from accounts.billing.models import ProjectBilling, UsageWarning
from accounts.billing.services import billing_limits_update
from messaging.sending.services import SendContent, emails_queue
from messaging.vocabulary import Address

pytestmark = pytest.mark.django_db


def _inline_form(project_id, **caps) -> dict:
    prefix = "billing"
    form = {
        "name": "Alice's shop",
        "tracking_mode": "ENABLED",
        "disabled_reason": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "invitations-TOTAL_FORMS": "0",
        "invitations-INITIAL_FORMS": "0",
        f"{prefix}-TOTAL_FORMS": "1",
        f"{prefix}-INITIAL_FORMS": "0",
        f"{prefix}-0-project": str(project_id),
    }
    form.update({f"{prefix}-0-limit_{name}": "" if value is None else str(value) for name, value in caps.items()})
    return form


def test_caps_are_edited_on_the_project_page_and_usage_shown(admin_client, project):
    url = f"/admin/accounts/project/{project.id}/change/"
    response = admin_client.post(url, _inline_form(project.id, transactional=2, campaigns=None))
    assert response.status_code == 302, response.context["errors"] if response.context else response
    assert ProjectBilling.objects.get(project=project.project).limit_transactional == 2

    content = SendContent(subject="Hi", body="<p>x</p>", sender=Address(email="hello@alice.test"))
    for to in ("a@example.test", "b@example.test"):
        emails_queue(project=project.project, recipients=[Address(email=to)], content=content)
    page = admin_client.get(url).content.decode()
    assert "Usage this month" in page
    assert "<b>transactional</b>: 2 of 2 (100 %)<b> BLOCKED</b>" in page


def test_a_cap_of_zero_is_refused_by_the_form(admin_client, project):
    response = admin_client.post(f"/admin/accounts/project/{project.id}/change/", _inline_form(project.id, inbound=0))
    assert response.status_code == 200
    assert not ProjectBilling.objects.filter(project=project.project).exists()


def test_warnings_list(admin_client, project):
    billing_limits_update(project=project.project, changes={"transactional": 1})
    content = SendContent(subject="Hi", body="<p>x</p>", sender=Address(email="hello@alice.test"))
    emails_queue(project=project.project, recipients=[Address(email="a@example.test")], content=content)
    assert UsageWarning.objects.filter(project=project.project).count() == 1
    assert admin_client.get("/admin/billing/usagewarning/").status_code == 200
    assert admin_client.get("/admin/billing/providerevent/").status_code == 200
