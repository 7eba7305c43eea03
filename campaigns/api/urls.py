from django.urls import path

from campaigns.api.views import CampaignViewSet

campaigns = CampaignViewSet.as_view

urlpatterns = [
    path("campaigns", campaigns({"get": "list", "post": "create"}), name="campaign-list"),
    path(
        "campaigns/<str:pk>",
        campaigns({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="campaign-detail",
    ),
    path("campaigns/<str:pk>/duplicate", campaigns({"post": "duplicate"}), name="campaign-duplicate"),
    path("campaigns/<str:pk>/send", campaigns({"post": "send"}), name="campaign-send"),
    path("campaigns/<str:pk>/cancel", campaigns({"post": "cancel"}), name="campaign-cancel"),
    path("campaigns/<str:pk>/test", campaigns({"post": "test"}), name="campaign-test"),
    path("campaigns/<str:pk>/stats", campaigns({"get": "stats"}), name="campaign-stats"),
]
