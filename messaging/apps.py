from django.apps import AppConfig


class MessagingConfig(AppConfig):
    name = "messaging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from messaging import registrations  # noqa: F401 - usage finders for domains and contact fields
