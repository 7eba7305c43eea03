from django.conf import settings
from django.urls import path

from messaging.uploads.api.views import ImageUploadView, media_serve

urlpatterns = [
    path("uploads/image", ImageUploadView.as_view(), name="upload-image"),
    path(f"{settings.MEDIA_URL.strip('/')}/<path:name>", media_serve, name="media"),
]
