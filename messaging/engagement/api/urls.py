"""Public, token-authenticated routes under PUBLIC_URL: the hosted subscription pages and the tracking endpoints."""

from django.urls import path

from messaging.engagement import pages
from messaging.engagement.api import views

urlpatterns = [
    path("unsubscribe/<str:token>", pages.unsubscribe_page, name="page-unsubscribe"),
    path("subscribe/<str:token>", pages.subscribe_page, name="page-subscribe"),
    path("manage/<str:token>", pages.manage_page, name="page-manage"),
    path("o/<str:token>", views.open_pixel, name="track-open"),
    path("c/<str:token>", views.click_redirect, name="track-click"),
]
