"""The messaging API: /v1/send, templates, activity and analytics (each room's `api` module holds its views)."""

from django.urls import include, path

from messaging.content.api import TemplateViewSet
from messaging.sending.api import SendView

templates = TemplateViewSet.as_view

urlpatterns = [
    path("v1/send", SendView.as_view(), name="v1-send"),
    path("templates", templates({"get": "list", "post": "create"}), name="template-list"),
    path(
        "templates/<str:pk>",
        templates({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="template-detail",
    ),
    path("templates/<str:pk>/duplicate", templates({"post": "duplicate"}), name="template-duplicate"),
    path("templates/<str:pk>/usage", templates({"get": "usage"}), name="template-usage"),
    path("", include("messaging.insights.urls")),
]
