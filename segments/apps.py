from django.apps import AppConfig


class SegmentsConfig(AppConfig):
    name = "segments"
    default_auto_field = "django.db.models.BigAutoField"
