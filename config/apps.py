from django.apps import AppConfig


class ServiceConfig(AppConfig):
    """The composition layer as an app: its management commands (`purge`, `doctor`) and tasks (the retention run)
    span every app, and its migrations keep the beat schedule's database copy in step with `config/schedule.py`."""

    name = "config"
    verbose_name = "Service"
    default_auto_field = "django.db.models.BigAutoField"
