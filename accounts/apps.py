from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import core.checks  # noqa: F401 - registers the service's system checks
        from accounts import services, tasks
        from accounts.jobs import register_job_task

        register_job_task(services.PROJECT_RESET_JOB, lambda job_id: tasks.project_reset_task.delay(job_id))
