from django.urls import path

from messaging.feedback.views import generic_webhook, provider_webhook

urlpatterns = [
    path("webhooks/generic", generic_webhook, name="webhook-generic"),
    path("webhooks/<str:provider>", provider_webhook, name="webhook-provider"),
]
