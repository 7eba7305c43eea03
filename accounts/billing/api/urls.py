from django.urls import path

from accounts.billing.api import views as api

_PROJECT = "users/@me/projects/<str:project_id>"

urlpatterns = [
    path("webhooks/incoming/stripe", api.StripeWebhookView.as_view(), name="webhook-stripe"),
    path(f"{_PROJECT}/billing-limits", api.BillingLimitsView.as_view(), name="billing-limits"),
    path(f"{_PROJECT}/billing-consumption", api.BillingConsumptionView.as_view(), name="billing-consumption"),
    path(f"{_PROJECT}/billing-invoices", api.BillingInvoicesView.as_view(), name="billing-invoices"),
    path(f"{_PROJECT}/checkout", api.BillingCheckoutView.as_view(), name="billing-checkout"),
    path(f"{_PROJECT}/billing-portal", api.BillingPortalView.as_view(), name="billing-portal"),
]
