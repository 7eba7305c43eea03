"""The billing endpoints of a project through the browser session: who may read and set caps, the provider's
redirects and invoices, and another project's billing out of reach."""

import pytest

from accounts.billing.models import ProjectBilling
from accounts.billing.tests.test_provider import stripe_api  # noqa: F401 - the stand-in of the provider's API
from accounts.identity.users import user_get_or_create
from accounts.models import Membership
from conftest import PASSWORD, session_client

pytestmark = pytest.mark.django_db


def _base(project_id) -> str:
    return f"/users/@me/projects/{project_id}"


@pytest.fixture
def owner(project):
    return session_client(project.owner_email)


@pytest.fixture
def member(project):
    user, _ = user_get_or_create(email="mia@example.test", password=PASSWORD)
    Membership.objects.create(project=project.project, user=user, role=Membership.Role.MEMBER)
    return session_client("mia@example.test")


def test_members_read_the_caps_and_only_the_owner_sets_them(owner, member, project, other_project):
    base = _base(project.id)
    answer = owner.put(f"{base}/billing-limits", {"transactional": 100, "campaigns": None}, format="json")
    assert answer.status_code == 200
    assert answer.json()["transactional"] == {
        "limit": 100,
        "usage": 0,
        "percentage": 0.0,
        "isWarning": False,
        "isBlocked": False,
    }
    assert member.get(f"{base}/billing-limits").json()["transactional"]["limit"] == 100
    refused = member.put(f"{base}/billing-limits", {"transactional": 5}, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "FORBIDDEN")
    assert ProjectBilling.objects.get(project=project.project).limit_transactional == 100

    bad = owner.put(f"{base}/billing-limits", {"transactional": 0, "workflows": "ten"}, format="json")
    assert bad.status_code == 422
    assert {error["field"] for error in bad.json()["error"]["errors"]} == {"transactional", "workflows"}
    assert ProjectBilling.objects.get(project=project.project).limit_transactional == 100

    consumption = member.get(f"{base}/billing-consumption").json()
    assert consumption["emails"] == {"transactional": 0, "campaigns": 0, "workflows": 0, "inbound": 0, "total": 0}
    assert consumption["periodStart"] < consumption["periodEnd"]

    for path in ("billing-limits", "billing-consumption", "billing-invoices"):
        denied = owner.get(f"{_base(other_project.id)}/{path}")
        assert (denied.status_code, denied.json()["error"]["code"]) == (403, "PROJECT_ACCESS_DENIED")
    assert not ProjectBilling.objects.filter(project=other_project.project).exists()


def test_without_a_provider_checkout_and_portal_are_501_and_invoices_empty(owner, member, project):
    base = _base(project.id)
    for path in ("checkout", "billing-portal"):
        answer = owner.post(f"{base}/{path}")
        assert (answer.status_code, answer.json()["error"]["code"]) == (501, "FEATURE_DISABLED")
        assert member.post(f"{base}/{path}").status_code == 403
    assert owner.get(f"{base}/billing-invoices").json() == {"invoices": []}
    assert member.get(f"{base}/billing-invoices").status_code == 403


def test_with_the_provider_the_owner_gets_its_pages(stripe_api, owner, project):  # noqa: F811
    base = _base(project.id)
    checkout = owner.post(f"{base}/checkout")
    assert checkout.status_code == 200 and checkout.json()["url"].startswith("http")
    portal = owner.post(f"{base}/billing-portal")
    assert portal.status_code == 200 and portal.json()["url"].startswith("http")
    assert isinstance(owner.get(f"{base}/billing-invoices").json()["invoices"], list)


def test_setup_state_says_whether_the_project_subscribes(owner, project):
    state = owner.get(f"/projects/{project.id}/setup-state", HTTP_X_PROJECT_ID=str(project.id))
    assert state.json()["data"]["hasSubscription"] is False
    ProjectBilling.objects.create(project=project.project, subscription_status=ProjectBilling.SubscriptionStatus.ACTIVE)
    state = owner.get(f"/projects/{project.id}/setup-state", HTTP_X_PROJECT_ID=str(project.id))
    assert state.json()["data"]["hasSubscription"] is True
