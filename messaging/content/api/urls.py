from django.urls import path

from messaging.content.api.views import TemplateViewSet

templates = TemplateViewSet.as_view

urlpatterns = [
    path("templates", templates({"get": "list", "post": "create"}), name="template-list"),
    path(
        "templates/<str:pk>",
        templates({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="template-detail",
    ),
    path("templates/<str:pk>/duplicate", templates({"post": "duplicate"}), name="template-duplicate"),
    path("templates/<str:pk>/usage", templates({"get": "usage"}), name="template-usage"),
]
