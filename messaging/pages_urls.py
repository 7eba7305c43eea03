"""Public, token-authenticated routes under PUBLIC_URL: the hosted subscription pages."""

from django.urls import path

from messaging import pages

urlpatterns = [
    path("unsubscribe/<str:token>", pages.unsubscribe_page, name="page-unsubscribe"),
    path("subscribe/<str:token>", pages.subscribe_page, name="page-subscribe"),
    path("manage/<str:token>", pages.manage_page, name="page-manage"),
]
