from django.urls import path

from messaging.sending.api.views import SendView

urlpatterns = [
    path("v1/send", SendView.as_view(), name="v1-send"),
]
