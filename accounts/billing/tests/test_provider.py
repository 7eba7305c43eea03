"""The payment provider: checkout, portal and invoices against a stand-in of its API on loopback, the signed
webhook (verified by the library), and everything switched off when its settings are empty."""

import hashlib
import hmac
import json
import time

import pytest

from accounts.billing.api.serializers import InvoicesSerializer, RedirectSerializer
from accounts.billing.models import ProjectBilling, ProviderEvent
from accounts.billing.provider import billing_checkout, billing_invoices, billing_portal
from accounts.billing.services import billing_limits
from accounts.billing.tests import stripe_standin
from core.errors import FeatureDisabled, ServiceError

pytestmark = pytest.mark.django_db
SECRET = "whsec_test_secret"


@pytest.fixture
def stripe_api(settings):
    stand_in, server = stripe_standin.start()
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    settings.STRIPE_PRICE_ID = "price_pro"
    settings.STRIPE_WEBHOOK_SECRET = SECRET
    settings.STRIPE_API_BASE = stand_in.base
    settings.STRIPE_MAX_NETWORK_RETRIES = 0
    settings.BILLING_RETURN_URL = "https://app.example.test/settings/billing"
    yield stand_in
    server.shutdown()
    server.server_close()


def signed(payload: dict, *, secret: str = SECRET, at: int | None = None) -> tuple[bytes, str]:
    body = json.dumps(payload).encode()
    timestamp = at or int(time.time())
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return body, f"t={timestamp},v1={digest}"


def event(event_id: str, kind: str, obj: dict, created: int | None = None) -> dict:
    return {
        "id": event_id,
        "object": "event",
        "type": kind,
        "created": created or int(time.time()),
        "data": {"object": obj},
        "livemode": False,
        "api_version": "2025-01-01",
    }


def post_webhook(client, body: bytes, signature: str | None):
    headers = {"HTTP_STRIPE_SIGNATURE": signature} if signature is not None else {}
    return client.post("/webhooks/incoming/stripe", body, content_type="application/json", **headers)


def test_checkout_makes_the_project_a_customer_once(stripe_api, project, other_project):
    first = billing_checkout(project=project.project)
    assert RedirectSerializer(first).data == {"url": "https://checkout.test/cs_test_1"}
    billing_checkout(project=project.project)
    assert stripe_api.paths() == [
        "POST /v1/customers",
        "POST /v1/checkout/sessions",
        "POST /v1/checkout/sessions",
    ]
    session = stripe_api.calls[1][2]
    assert session["mode"] == "subscription" and session["customer"] == "cus_1"
    assert session["client_reference_id"] == str(project.id)
    assert session["line_items[0][price]"] == "price_pro"
    assert session["success_url"] == "https://app.example.test/settings/billing"
    assert stripe_api.calls[0][2]["metadata[projectId]"] == str(project.id)
    assert ProjectBilling.objects.get(project=project.project).customer_id == "cus_1"
    assert not ProjectBilling.objects.filter(project=other_project.project).exists()


def test_portal_and_invoices(stripe_api, project, other_project):
    assert billing_invoices(project=project.project) == []  # not a customer yet: nothing asked
    assert billing_portal(project=project.project).url == "https://portal.test/bps_1"
    assert stripe_api.calls[-1][2] == {"customer": "cus_1", "return_url": "https://app.example.test/settings/billing"}
    stripe_api.invoices.append(
        {
            "id": "in_1",
            "object": "invoice",
            "customer": "cus_1",
            "number": "A-0001",
            "status": "paid",
            "currency": "eur",
            "amount_due": 900,
            "amount_paid": 900,
            "created": 1764000000,
            "period_start": 1761000000,
            "period_end": 1763600000,
            "hosted_invoice_url": "https://invoice.test/in_1",
            "invoice_pdf": "https://invoice.test/in_1.pdf",
        }
    )
    [invoice] = InvoicesSerializer({"invoices": billing_invoices(project=project.project)}).data["invoices"]
    assert invoice == {
        "id": "in_1",
        "number": "A-0001",
        "status": "paid",
        "currency": "eur",
        "amountDue": 900,
        "amountPaid": 900,
        "createdAt": "2025-11-24T16:00:00.000Z",
        "periodStart": "2025-10-20T22:40:00.000Z",
        "periodEnd": "2025-11-20T00:53:20.000Z",
        "hostedInvoiceUrl": "https://invoice.test/in_1",
        "invoicePdf": "https://invoice.test/in_1.pdf",
    }
    assert stripe_api.calls[-1][:2] == ("GET", "/v1/invoices") and stripe_api.calls[-1][2]["customer"] == "cus_1"
    assert billing_invoices(project=other_project.project) == []


def test_a_provider_error_is_a_502_with_its_message(stripe_api, project):
    stripe_api.failing = True
    with pytest.raises(ServiceError) as failed:
        billing_checkout(project=project.project)
    assert (failed.value.status, failed.value.code) == (502, "PAYMENT_PROVIDER_ERROR")
    assert "No such price" in failed.value.details["providerMessage"]


@pytest.mark.parametrize("missing", ["STRIPE_SECRET_KEY", "STRIPE_PRICE_ID"])
def test_without_its_settings_checkout_and_portal_are_501_and_invoices_empty(settings, project, missing):
    settings.STRIPE_SECRET_KEY, settings.STRIPE_PRICE_ID = "sk_test_123", "price_pro"
    setattr(settings, missing, "")
    ProjectBilling.objects.create(project=project.project, customer_id="cus_1")
    for call in (billing_checkout, billing_portal):
        with pytest.raises(FeatureDisabled) as disabled:
            call(project=project.project)
        assert (disabled.value.status, disabled.value.code) == (501, "FEATURE_DISABLED")
    assert InvoicesSerializer({"invoices": billing_invoices(project=project.project)}).data == {"invoices": []}


def test_a_completed_checkout_and_subscription_events_set_the_subscription(stripe_api, anon_client, project, settings):
    settings.FREE_TIER_MONTHLY_EMAILS = 100
    assert billing_limits(project=project.project)["transactional"].limit == 100
    stripe_api.subscriptions["sub_1"] = {"id": "sub_1", "customer": "cus_9", "status": "active"}
    body, signature = signed(
        event(
            "evt_1",
            "checkout.session.completed",
            {
                "object": "checkout.session",
                "id": "cs_1",
                "client_reference_id": str(project.id),
                "customer": "cus_9",
                "subscription": "sub_1",
                "payment_status": "paid",
            },
        )
    )
    response = post_webhook(anon_client, body, signature)
    assert response.status_code == 200, response.json()
    assert response.json() == {"received": True, "applied": True}
    billing = ProjectBilling.objects.get(project=project.project)
    assert (billing.customer_id, billing.subscription_id, billing.subscription_status) == ("cus_9", "sub_1", "active")
    # A paying project is out of the free tier.
    assert billing_limits(project=project.project)["transactional"].limit is None

    subscription = {
        "object": "subscription",
        "id": "sub_1",
        "customer": "cus_9",
        "status": "past_due",
        "items": {"object": "list", "data": [{"id": "si_1", "current_period_end": 1767225600}]},
    }
    stripe_api.subscriptions["sub_1"] = subscription
    body, signature = signed(event("evt_2", "customer.subscription.updated", subscription))
    assert post_webhook(anon_client, body, signature).status_code == 200
    billing.refresh_from_db()
    assert billing.subscription_status == "past_due"
    assert billing.subscription_period_end.isoformat() == "2026-01-01T00:00:00+00:00"
    assert billing_limits(project=project.project)["transactional"].limit == 100

    stripe_api.subscriptions["sub_1"] = {**subscription, "status": "canceled"}
    body, signature = signed(event("evt_3", "customer.subscription.deleted", {**subscription, "status": "canceled"}))
    assert post_webhook(anon_client, body, signature).status_code == 200
    billing.refresh_from_db()
    assert billing.subscription_status == "canceled"
    assert ProviderEvent.objects.filter(project=project.project).count() == 3


def test_a_replayed_event_changes_nothing_twice(stripe_api, anon_client, project):
    subscription = {
        "object": "subscription",
        "id": "sub_1",
        "customer": "cus_9",
        "status": "active",
        "metadata": {"projectId": str(project.id)},
    }
    stripe_api.subscriptions["sub_1"] = subscription
    body, signature = signed(event("evt_1", "customer.subscription.created", subscription))
    assert post_webhook(anon_client, body, signature).json() == {"received": True, "applied": True}
    ProjectBilling.objects.filter(project=project.project).update(subscription_status="canceled")
    replay = post_webhook(anon_client, body, signature)
    assert replay.status_code == 200
    assert replay.json() == {"received": True, "applied": False}
    assert ProjectBilling.objects.get(project=project.project).subscription_status == "canceled"
    assert ProviderEvent.objects.count() == 1


def test_an_older_event_delivered_late_changes_nothing(stripe_api, anon_client, project):
    subscription = {
        "object": "subscription",
        "id": "sub_1",
        "customer": "cus_9",
        "metadata": {"projectId": str(project.id)},
    }
    now = int(time.time())
    stripe_api.subscriptions["sub_1"] = {**subscription, "status": "active"}
    body, signature = signed(event("evt_2", "customer.subscription.updated", {**subscription, "status": "active"}, now))
    post_webhook(anon_client, body, signature)
    late = event("evt_1", "customer.subscription.updated", {**subscription, "status": "incomplete"}, now - 60)
    body, signature = signed(late)
    assert post_webhook(anon_client, body, signature).status_code == 200
    assert ProjectBilling.objects.get(project=project.project).subscription_status == "active"


def test_events_of_the_same_second_end_in_the_subscriptions_own_state(stripe_api, anon_client, project):
    # A cancellation and an update stamped the same second, the deletion delivered first: the update's own copy
    # still says active (before the provider was asked, it turned the cancelled subscription back to active).
    subscription = {"object": "subscription", "id": "sub_1", "customer": "cus_9"}
    subscription["metadata"] = {"projectId": str(project.id)}
    stripe_api.subscriptions["sub_1"] = {**subscription, "status": "canceled"}
    second = int(time.time())
    for event_id, kind, status in [
        ("evt_b", "customer.subscription.deleted", "canceled"),
        ("evt_a", "customer.subscription.updated", "active"),
    ]:
        body, signature = signed(event(event_id, kind, {**subscription, "status": status}, second))
        assert post_webhook(anon_client, body, signature).status_code == 200
        assert ProjectBilling.objects.get(project=project.project).subscription_status == "canceled"
    assert stripe_api.paths() == ["GET /v1/subscriptions/sub_1", "GET /v1/subscriptions/sub_1"]


def test_events_of_another_subscription_do_not_speak_for_the_one_paid_with(stripe_api, anon_client, project):
    metadata = {"projectId": str(project.id)}
    stripe_api.subscriptions["sub_old"] = {"id": "sub_old", "customer": "cus_9", "status": "canceled"}
    stripe_api.subscriptions["sub_new"] = {"id": "sub_new", "customer": "cus_9", "status": "active"}

    def deliver(event_id: str, subscription_id: str, status: str) -> dict:
        obj = {"object": "subscription", "id": subscription_id, "customer": "cus_9", "status": status}
        body, signature = signed(event(event_id, "customer.subscription.updated", {**obj, "metadata": metadata}))
        return post_webhook(anon_client, body, signature).json()

    assert deliver("evt_1", "sub_new", "active") == {"received": True, "applied": True}
    # The old subscription's late news (its cancellation) leaves the paying one alone.
    assert deliver("evt_2", "sub_old", "canceled") == {"received": True, "applied": False}
    billing = ProjectBilling.objects.get(project=project.project)
    assert (billing.subscription_id, billing.subscription_status) == ("sub_new", "active")
    # Once that one ends, a new subscription takes its place.
    stripe_api.subscriptions["sub_new"]["status"] = "canceled"
    stripe_api.subscriptions["sub_3"] = {"id": "sub_3", "customer": "cus_9", "status": "trialing"}
    assert deliver("evt_3", "sub_new", "canceled")["applied"]
    assert deliver("evt_4", "sub_3", "trialing")["applied"]
    billing.refresh_from_db()
    assert (billing.subscription_id, billing.subscription_status) == ("sub_3", "trialing")


def test_a_subscription_the_provider_cannot_tell_about_is_retried_or_ignored(stripe_api, anon_client, project):
    obj = {"object": "subscription", "id": "sub_1", "customer": "cus_9", "status": "active"}
    body, signature = signed(
        event("evt_1", "customer.subscription.created", {**obj, "metadata": {"projectId": str(project.id)}})
    )
    # The provider's API failing: 502, nothing recorded, so its redelivery applies the event.
    stripe_api.failing = True
    response = post_webhook(anon_client, body, signature)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "PAYMENT_PROVIDER_ERROR"
    assert not ProviderEvent.objects.exists() and not ProjectBilling.objects.exists()
    # A subscription it does not know (made up by whoever holds the signing secret): received, not applied.
    stripe_api.failing = False
    assert post_webhook(anon_client, body, signature).json() == {"received": True, "applied": False}
    assert ProjectBilling.objects.get(project=project.project).subscription_status == ""
    # Known now: the next delivery of another event applies it.
    stripe_api.subscriptions["sub_1"] = obj
    body, signature = signed(
        event("evt_2", "customer.subscription.updated", {**obj, "metadata": {"projectId": str(project.id)}})
    )
    assert post_webhook(anon_client, body, signature).json() == {"received": True, "applied": True}
    assert ProjectBilling.objects.get(project=project.project).subscription_status == "active"


@pytest.mark.parametrize(
    "signature",
    [None, "", "t=1,v1=deadbeef", "garbage", "wrong-secret", "stale"],
)
def test_a_bad_or_missing_signature_is_400_and_changes_nothing(stripe_api, anon_client, project, signature):
    payload = event(
        "evt_1",
        "customer.subscription.created",
        {
            "object": "subscription",
            "id": "sub_1",
            "customer": "cus_9",
            "status": "active",
            "metadata": {"projectId": str(project.id)},
        },
    )
    body, good = signed(payload)
    if signature == "wrong-secret":
        signature = signed(payload, secret="whsec_other")[1]
    elif signature == "stale":
        signature = signed(payload, at=int(time.time()) - 3600)[1]
    response = post_webhook(anon_client, body, signature)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "BAD_REQUEST"
    assert not ProjectBilling.objects.exists() and not ProviderEvent.objects.exists()
    # The same body with its right signature still goes through afterwards.
    assert post_webhook(anon_client, body, good).status_code == 200


def test_a_tampered_body_is_400(stripe_api, anon_client, project):
    body, signature = signed(event("evt_1", "customer.subscription.created", {"id": "sub_1", "customer": "cus_9"}))
    response = post_webhook(anon_client, body.replace(b"sub_1", b"sub_2"), signature)
    assert response.status_code == 400


def test_other_event_kinds_are_acknowledged_and_recorded(stripe_api, anon_client):
    body, signature = signed(event("evt_1", "invoice.paid", {"object": "invoice", "id": "in_1", "customer": "cus_x"}))
    response = post_webhook(anon_client, body, signature)
    assert response.json() == {"received": True, "applied": False}
    assert ProviderEvent.objects.get().type == "invoice.paid"


def test_without_a_signing_secret_the_webhook_is_403(settings, anon_client):
    settings.STRIPE_WEBHOOK_SECRET = ""
    body, signature = signed(event("evt_1", "invoice.paid", {"id": "in_1"}))
    response = post_webhook(anon_client, body, signature)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert not ProviderEvent.objects.exists()
