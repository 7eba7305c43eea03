from django.urls import path

from segments.api.views import SegmentViewSet

segments = SegmentViewSet.as_view

urlpatterns = [
    path("segments", segments({"get": "list", "post": "create"}), name="segment-list"),
    path(
        "segments/<str:pk>",
        segments({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="segment-detail",
    ),
    path("segments/<str:pk>/contacts", segments({"get": "contacts"}), name="segment-contacts"),
    path(
        "segments/<str:pk>/members",
        segments(
            {"post": "members_add", "delete": "members_remove"},
            method_hints={"GET": "A segment's members, page by page: GET /segments/{id}/contacts"},
        ),
        name="segment-members",
    ),
    path("segments/<str:pk>/compute", segments({"post": "compute"}), name="segment-compute"),
    path("segments/<str:pk>/refresh", segments({"post": "refresh"}), name="segment-refresh"),
]
