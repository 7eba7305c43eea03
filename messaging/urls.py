"""The messaging API, one include per room (each room's `api` holds its views and routes). `/v1/send` comes first:
Django tries the patterns in order. The engagement routes are included by `config/urls.py` ahead of every app."""

from django.urls import include, path

urlpatterns = [
    path("", include("messaging.sending.api.urls")),
    path("", include("messaging.content.api.urls")),
    path("", include("messaging.insights.api.urls")),
    path("", include("messaging.feedback.api.urls")),
    path("", include("messaging.uploads.api.urls")),
]
