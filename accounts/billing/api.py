"""`POST /webhooks/incoming/stripe`: the payment provider's events, authenticated by their signature alone."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from accounts.billing import serializers as s
from accounts.billing.provider import billing_webhook_receive
from config.api.schema import ERROR_RESPONSE
from config.api.views import PublicApiView


class StripeWebhookView(PublicApiView):
    # The provider retries bursts of events from a few addresses; the signature, not a rate limit, keeps others out.
    rate_limited = False

    @extend_schema(
        summary="Payment provider events (subscription changes), signed with the webhook secret",
        request=None,
        responses={200: s.WebhookReceivedSerializer, 400: ERROR_RESPONSE, 403: ERROR_RESPONSE},
    )
    def post(self, request):
        applied = billing_webhook_receive(payload=request.body, signature=request.headers.get("Stripe-Signature"))
        return Response(s.WebhookReceivedSerializer({"received": True, "applied": applied}).data)
