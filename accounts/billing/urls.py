from django.urls import path

from accounts.billing.api import StripeWebhookView

urlpatterns = [
    path("webhooks/incoming/stripe", StripeWebhookView.as_view(), name="webhook-stripe"),
]
