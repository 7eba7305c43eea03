from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_save


def _forget_user_sessions(*, instance, **kwargs) -> None:
    from accounts.tenancy.sessioncache import forget_user

    forget_user(instance.pk)


def _forget_logged_out(*, user, **kwargs) -> None:
    if user is not None:
        from accounts.tenancy.sessioncache import forget_user

        forget_user(user.pk)


def _forget_project_sessions(*, instance, **kwargs) -> None:
    from accounts.tenancy.sessioncache import forget_project

    forget_project(instance.project_id)


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import core.checks  # noqa: F401 - registers the service's system checks
        from accounts.jobs.services import job_tasks
        from accounts.tenancy import services, tasks

        job_tasks.register(lambda job_id: tasks.project_reset_task.delay(job_id), key=services.PROJECT_RESET_JOB)

        # The sessions' cached access to projects (accounts.tenancy.sessioncache) is forgotten on every change to a user or a
        # membership, whoever makes it: the services, the admin (its inlines too), deletes that cascade, logins.
        from accounts.models import Membership, User

        post_save.connect(_forget_user_sessions, sender=User, dispatch_uid="accounts-sessions-user-save")
        post_delete.connect(_forget_user_sessions, sender=User, dispatch_uid="accounts-sessions-user-delete")
        user_logged_out.connect(_forget_logged_out, dispatch_uid="accounts-sessions-logout")
        post_save.connect(_forget_project_sessions, sender=Membership, dispatch_uid="accounts-sessions-member-save")
        post_delete.connect(_forget_project_sessions, sender=Membership, dispatch_uid="accounts-sessions-member-del")
