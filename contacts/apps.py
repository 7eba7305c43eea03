from django.apps import AppConfig


class ContactsConfig(AppConfig):
    name = "contacts"
    default_auto_field = "django.db.models.BigAutoField"
