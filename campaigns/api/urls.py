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
]
