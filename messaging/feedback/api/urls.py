from django.urls import path

from messaging.feedback.api.views import ProjectSecurityView, UserProjectSecurityView
from messaging.feedback.api.webhooks import generic_webhook, provider_webhook

urlpatterns = [
    path("webhooks/generic", generic_webhook, name="webhook-generic"),
    path("webhooks/<str:provider>", provider_webhook, name="webhook-provider"),
    path("projects/<str:project_id>/security", ProjectSecurityView.as_view(), name="project-security"),
    path(
        "users/@me/projects/<str:project_id>/security",
        UserProjectSecurityView.as_view(),
        name="users-me-project-security",
    ),
]
