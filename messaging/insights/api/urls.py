from django.urls import path

from messaging.insights.api import views

urlpatterns = [
    path("activity", views.ActivityListView.as_view(), name="activity-list"),
    path("activity/stats", views.ActivityStatsView.as_view(), name="activity-stats"),
    path("activity/recent-count", views.ActivityRecentCountView.as_view(), name="activity-recent-count"),
    path("activity/types", views.ActivityTypesView.as_view(), name="activity-types"),
    path("activity/upcoming", views.ActivityUpcomingView.as_view(), name="activity-upcoming"),
    path("analytics/timeseries", views.TimeseriesView.as_view(), name="analytics-timeseries"),
    path("analytics/top-events", views.TopEventsView.as_view(), name="analytics-top-events"),
    path("analytics/top-campaigns", views.TopCampaignsView.as_view(), name="analytics-top-campaigns"),
    path("analytics/campaign-stats", views.CampaignStatsView.as_view(), name="analytics-campaign-stats"),
]
