"""The payment provider (Stripe, through its own library): checkout, the billing portal, invoices and its webhook.

Active only when `STRIPE_SECRET_KEY` and `STRIPE_PRICE_ID` are set (`provider_enabled`); otherwise checkout and
the portal are 501 `FEATURE_DISABLED` and the invoice list is empty. A project becomes a customer at its first
checkout or portal visit; its subscription state comes from the webhook only (docs/billing.md).
"""

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

import stripe
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.billing.models import ProjectBilling, ProviderEvent
from accounts.models import Project
from core.errors import BadRequest, FeatureDisabled, Forbidden, ServiceError
from core.ids import uuid_or_none

logger = logging.getLogger(__name__)
INVOICES_SHOWN = 24
SUBSCRIPTION_EVENTS = (
    "customer.subscription.created",
    "customer.subscription.updated",
    "customer.subscription.deleted",
)


def provider_enabled() -> bool:
    return bool(settings.STRIPE_SECRET_KEY and settings.STRIPE_PRICE_ID)


def _client() -> stripe.StripeClient:
    if not provider_enabled():
        raise FeatureDisabled(
            "Billing is not configured on this installation",
            suggestion="Set STRIPE_SECRET_KEY and STRIPE_PRICE_ID to enable it",
        )
    return stripe.StripeClient(
        settings.STRIPE_SECRET_KEY,
        base_addresses={"api": settings.STRIPE_API_BASE},
        max_network_retries=settings.STRIPE_MAX_NETWORK_RETRIES,
    )


def _provider_failed(exc: stripe.StripeError) -> ServiceError:
    logger.warning("Payment provider call failed: %s", exc)
    return ServiceError(
        "The payment provider could not complete the request",
        code="PAYMENT_PROVIDER_ERROR",
        status=502,
        details={"providerMessage": getattr(exc, "user_message", None) or str(exc)[:500]},
    )


def _return_url() -> str:
    return settings.BILLING_RETURN_URL or settings.PUBLIC_URL


def _customer_id(client: stripe.StripeClient, project: Project) -> str:
    """The project's customer at the provider, created on first use (under the billing row's lock, so that two
    first visits make one customer)."""
    with transaction.atomic():
        billing, _ = ProjectBilling.objects.select_for_update().get_or_create(project=project)
        if not billing.customer_id:
            customer = client.v1.customers.create(
                params={"name": project.name[:250], "metadata": {"projectId": str(project.id)}}
            )
            billing.customer_id = customer.id
            billing.updated_at = timezone.now()
            billing.save(update_fields=["customer_id", "updated_at"])
        return billing.customer_id


@dataclass(frozen=True)
class Redirect:
    url: str


def billing_checkout(*, project: Project) -> Redirect:
    """A checkout session for the subscription of `STRIPE_PRICE_ID`; the client sends the user to its url."""
    client = _client()
    try:
        customer = _customer_id(client, project)
        session = client.v1.checkout.sessions.create(
            params={
                "mode": "subscription",
                "customer": customer,
                "client_reference_id": str(project.id),
                "line_items": [{"price": settings.STRIPE_PRICE_ID, "quantity": 1}],
                "subscription_data": {"metadata": {"projectId": str(project.id)}},
                "metadata": {"projectId": str(project.id)},
                "success_url": _return_url(),
                "cancel_url": _return_url(),
            }
        )
    except stripe.StripeError as exc:
        raise _provider_failed(exc) from exc
    return Redirect(url=session.url)


def billing_portal(*, project: Project) -> Redirect:
    client = _client()
    try:
        customer = _customer_id(client, project)
        session = client.v1.billing_portal.sessions.create(params={"customer": customer, "return_url": _return_url()})
    except stripe.StripeError as exc:
        raise _provider_failed(exc) from exc
    return Redirect(url=session.url)


@dataclass(frozen=True)
class Invoice:
    id: str
    number: str | None
    status: str | None
    currency: str
    amount_due: int
    amount_paid: int
    created_at: datetime
    period_start: datetime | None
    period_end: datetime | None
    hosted_url: str | None
    pdf_url: str | None


def _moment(seconds) -> datetime | None:
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def billing_invoices(*, project: Project) -> list[Invoice]:
    """The project's latest invoices at the provider, newest first; none when billing is off or it never paid."""
    if not provider_enabled():
        return []
    billing = ProjectBilling.objects.filter(project=project).exclude(customer_id="").first()
    if billing is None:
        return []
    try:
        page = _client().v1.invoices.list(params={"customer": billing.customer_id, "limit": INVOICES_SHOWN})
    except stripe.StripeError as exc:
        raise _provider_failed(exc) from exc
    return [
        Invoice(
            id=item["id"],
            number=item.get("number"),
            status=item.get("status"),
            currency=item.get("currency") or "",
            amount_due=item.get("amount_due") or 0,
            amount_paid=item.get("amount_paid") or 0,
            created_at=_moment(item.get("created")),
            period_start=_moment(item.get("period_start")),
            period_end=_moment(item.get("period_end")),
            hosted_url=item.get("hosted_invoice_url"),
            pdf_url=item.get("invoice_pdf"),
        )
        for item in (invoice.to_dict() for invoice in page.data)
    ]


def _event(payload: bytes, signature: str | None):
    if not settings.STRIPE_WEBHOOK_SECRET:
        # As the mail providers' webhooks without credentials: nothing here can authenticate the caller.
        raise Forbidden("The payment provider's webhook is not configured on this installation")
    if not signature:
        raise BadRequest("Missing Stripe-Signature header", details={"header": "Stripe-Signature"})
    try:
        return stripe.Webhook.construct_event(
            payload, signature, settings.STRIPE_WEBHOOK_SECRET, tolerance=settings.STRIPE_WEBHOOK_TOLERANCE
        )
    except stripe.SignatureVerificationError:
        raise BadRequest("Invalid signature", details={"header": "Stripe-Signature"}) from None
    except ValueError:
        raise BadRequest("The event is not valid JSON") from None


def _billing_for(obj) -> ProjectBilling | None:
    """The billing row an event's object belongs to: by the project id we put in its metadata or reference, else
    by the customer."""
    metadata = obj.get("metadata") or {}
    project_id = uuid_or_none(obj.get("client_reference_id") or metadata.get("projectId"))
    if project_id is not None and Project.objects.filter(id=project_id).exists():
        return ProjectBilling.objects.select_for_update().get_or_create(project_id=project_id)[0]
    customer = obj.get("customer")
    if customer:
        return ProjectBilling.objects.select_for_update().filter(customer_id=customer).first()
    return None


def _period_end(subscription) -> datetime | None:
    # Newer API versions keep the period on the subscription's items.
    if subscription.get("current_period_end"):
        return _moment(subscription["current_period_end"])
    items = (subscription.get("items") or {}).get("data") or []
    return _moment(items[0].get("current_period_end")) if items else None


MISSING: dict = {}


def _subscription_now(subscription_id: str) -> dict | None:
    """The subscription as the provider holds it now. Events of one second can arrive in any order (a deletion and
    an update both stamped 12:00:00), so their own copies cannot say which came last; the provider's current state
    can. A failure is a 502: nothing is recorded and the provider delivers the event again."""
    if not provider_enabled():
        return None
    try:
        return _client().v1.subscriptions.retrieve(subscription_id).to_dict()
    except stripe.InvalidRequestError as exc:
        if exc.code == "resource_missing":
            return MISSING
        raise _provider_failed(exc) from exc
    except stripe.StripeError as exc:
        raise _provider_failed(exc) from exc


def _subscription_status(subscription: dict) -> str:
    status = subscription.get("status") or ""
    if status not in ProjectBilling.SubscriptionStatus.values:
        return ProjectBilling.SubscriptionStatus.INCOMPLETE  # incomplete_expired, paused: not paying
    return status


def _apply(event, obj: dict, billing: ProjectBilling) -> bool:
    happened = _moment(event.created)
    if billing.subscription_event_at and happened and happened < billing.subscription_event_at:
        return False  # delivered late: a newer event already said more
    if event.type == "checkout.session.completed":
        subscription_id = obj.get("subscription")
        subscription = None
    else:
        subscription_id, subscription = obj.get("id"), obj
    if not subscription_id:
        return False
    if billing.subscription_id and subscription_id != billing.subscription_id and billing.subscribed:
        # An event of an older (or a second) subscription does not speak for the one the project pays with.
        logger.info(
            "Stripe event %s is for %s, not the project's %s", event.id, subscription_id, billing.subscription_id
        )
        return False
    if obj.get("customer") and not billing.customer_id:
        billing.customer_id = obj["customer"]
    billing.subscription_id = subscription_id
    current = _subscription_now(subscription_id)
    if current is MISSING:
        # Not the provider's (another account's, or made up by whoever holds the signing secret): nothing to apply.
        logger.warning(
            "Stripe event %s names subscription %s, which the provider does not know", event.id, subscription_id
        )
        return False
    if current is not None:
        subscription = current
    if subscription is not None:
        billing.subscription_status = _subscription_status(subscription)
        if event.type == "customer.subscription.deleted" and current is None:
            billing.subscription_status = ProjectBilling.SubscriptionStatus.CANCELED
        billing.subscription_period_end = _period_end(subscription)
    else:
        # A checkout while the API cannot be asked (only a signing secret configured): its payment says enough.
        paid = obj.get("payment_status") in ("paid", "no_payment_required")
        status = ProjectBilling.SubscriptionStatus.ACTIVE if paid else ProjectBilling.SubscriptionStatus.INCOMPLETE
        billing.subscription_status = status
    billing.subscription_event_at = happened
    billing.updated_at = timezone.now()
    billing.save()
    return True


@transaction.atomic
def billing_webhook_receive(*, payload: bytes, signature: str | None) -> bool:
    """`POST /webhooks/incoming/stripe`: verify the signature (400 when missing or wrong, nothing written), then
    apply the event once. Returns False for an event id seen before (nothing changes twice) or of a kind that
    does not concern subscriptions (recorded all the same)."""
    event = _event(payload, signature)
    try:
        with transaction.atomic():
            receipt = ProviderEvent.objects.create(event_id=event.id, type=event.type)
    except IntegrityError:
        return False
    if event.type != "checkout.session.completed" and event.type not in SUBSCRIPTION_EVENTS:
        return False
    obj = event.data.object.to_dict()
    billing = _billing_for(obj)
    if billing is None:
        logger.warning("Stripe event %s (%s) names no known project or customer", event.id, event.type)
        return False
    receipt.project_id = billing.project_id
    receipt.save(update_fields=["project"])
    return _apply(event, obj, billing)
