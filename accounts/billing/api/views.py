"""The billing endpoints of a project (`/users/@me/projects/:id/billing-*`, `checkout`, `billing-portal`; the
browser session's, docs/billing.md) and `POST /webhooks/incoming/stripe`, the payment provider's events,
authenticated by their signature alone."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from accounts.billing.api import serializers as s
from accounts.billing.provider import (
    billing_checkout,
    billing_invoices,
    billing_portal,
    billing_webhook_receive,
)
from accounts.billing.services import billing_consumption, billing_limits, billing_limits_update
from accounts.http.views import MemberProjectView, PublicApiView
from accounts.models import Membership
from core.http.schema import ERROR_RESPONSE

Role = Membership.Role


class StripeWebhookView(PublicApiView):
    # The provider retries bursts of events from a few addresses; the signature, not a rate limit, keeps others out.
    rate_limited = False

    @extend_schema(
        summary="Payment provider events (subscription changes), signed with the webhook secret",
        description="Stripe's event as it sends it; no key: the Stripe-Signature header authenticates it.",
        request={"application/json": OpenApiTypes.OBJECT},
        auth=[{"stripeSignature": []}],
        responses={200: s.WebhookReceivedSerializer, 400: ERROR_RESPONSE, 403: ERROR_RESPONSE},
    )
    def post(self, request):
        applied = billing_webhook_receive(payload=request.body, signature=request.headers.get("Stripe-Signature"))
        return Response(s.WebhookReceivedSerializer({"received": True, "applied": applied}).data)


class BillingLimitsView(MemberProjectView):
    """`GET/PUT /users/@me/projects/:id/billing-limits`: any member reads the caps; only the OWNER sets them."""

    roles = {"PUT": Role.OWNER}

    @extend_schema(
        summary="The monthly caps and this month's usage per category",
        responses={200: s.BillingLimitsSerializer, 403: ERROR_RESPONSE},
    )
    def get(self, request, project_id):
        return Response(s.BillingLimitsSerializer(billing_limits(project=self.project)).data)

    @extend_schema(
        summary="Set monthly caps (a positive integer, or null for none); categories left out keep theirs",
        request=s.BillingLimitsInputSerializer,
        responses={200: s.BillingLimitsSerializer, 403: ERROR_RESPONSE, 422: ERROR_RESPONSE},
    )
    def put(self, request, project_id):
        limits = billing_limits_update(project=self.project, changes=request.data)
        return Response(s.BillingLimitsSerializer(limits).data)


class BillingConsumptionView(MemberProjectView):
    roles = {}

    @extend_schema(
        summary="Emails created this calendar month (UTC) per category",
        responses={200: s.BillingConsumptionSerializer, 403: ERROR_RESPONSE},
    )
    def get(self, request, project_id):
        return Response(s.BillingConsumptionSerializer(billing_consumption(project=self.project)).data)


class BillingInvoicesView(MemberProjectView):
    roles = {"GET": Role.OWNER}

    @extend_schema(
        summary="The payment provider's invoices of the project (none when no provider is configured)",
        responses={200: s.InvoicesSerializer, 403: ERROR_RESPONSE},
    )
    def get(self, request, project_id):
        return Response(s.InvoicesSerializer({"invoices": billing_invoices(project=self.project)}).data)


class BillingCheckoutView(MemberProjectView):
    roles = {"POST": Role.OWNER}

    @extend_schema(
        summary="A payment provider checkout session for the project's subscription",
        request=None,
        responses={200: s.RedirectSerializer, 403: ERROR_RESPONSE, 501: ERROR_RESPONSE, 502: ERROR_RESPONSE},
    )
    def post(self, request, project_id):
        return Response(s.RedirectSerializer(billing_checkout(project=self.project)).data)


class BillingPortalView(MemberProjectView):
    roles = {"POST": Role.OWNER}

    @extend_schema(
        summary="The payment provider's billing portal for the project",
        request=None,
        responses={200: s.RedirectSerializer, 403: ERROR_RESPONSE, 501: ERROR_RESPONSE, 502: ERROR_RESPONSE},
    )
    def post(self, request, project_id):
        return Response(s.RedirectSerializer(billing_portal(project=self.project)).data)
