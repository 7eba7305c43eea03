import gc
import os

from celery import Celery, signals

from core import filesystem_broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

filesystem_broker.register()
app = Celery("herald")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Rooms of an app (packages inside it) that have tasks: autodiscovery looks only at the installed apps' `tasks`.
app.autodiscover_tasks(["accounts.identity", "accounts.jobs", "messaging.sending", "messaging.engagement"])


@signals.setup_logging.connect
def _log_as_the_web_processes_do(**kwargs):
    # Connected, this keeps Celery from replacing the root logger's handlers with its own: the worker's lines then
    # have the settings' format (LOG_FORMAT) and their request and project ids.
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@signals.worker_process_init.connect
def _freeze_loaded_objects(**kwargs):
    # As in the web workers (config/wsgi.py): what a worker process starts with lives as long as it does, and the
    # cycle collector need not scan it again and again.
    gc.freeze()


@signals.worker_process_shutdown.connect
def _forget_process_metrics(pid=None, **kwargs):
    from core.metrics import process_exited

    process_exited(pid or os.getpid())


@signals.before_task_publish.connect
def _carry_request_id(headers=None, **kwargs):
    # A task queued while serving a request logs under that request's id (and its project's).
    from core.http.middleware import current_project_id, current_request_id

    request_id = current_request_id()
    if headers is not None and request_id != "-":
        headers.setdefault("request_id", request_id)
        headers.setdefault("project_id", current_project_id())


@signals.task_prerun.connect
def _restore_request_id(task=None, **kwargs):
    from core.http.middleware import current_project_id, current_request_id, set_request_id

    request = task.request
    if request.is_eager and current_request_id() != "-":
        # Eager tasks (tests, development) run inside the request that queued them: they keep its ids.
        ids = (current_request_id(), current_project_id())
    else:
        ids = (getattr(request, "request_id", None) or request.id or "-", getattr(request, "project_id", None) or "-")
    # Put back afterwards what was there before.
    request.herald_previous_request_id = set_request_id(*ids)


@signals.task_postrun.connect
def _forget_request_id(task=None, **kwargs):
    from core.http.middleware import reset_request_id

    previous = getattr(task.request, "herald_previous_request_id", None)
    if previous is not None:
        reset_request_id(previous)


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(task=None, **kwargs):
    # What Django does around each request, around each task (see CELERY_DB_REUSE_MAX): connections past
    # CONN_MAX_AGE, left unusable by an error or with a transaction open are closed; the others are kept. Not for
    # an eager task, which runs inside the caller's connection and transaction.
    if not task.request.is_eager:
        from django.db import close_old_connections

        close_old_connections()


@signals.task_failure.connect
def _count_task_failure(sender=None, **kwargs):
    from core.metrics import TASK_FAILURES

    TASK_FAILURES.labels(task=getattr(sender, "name", "unknown")).inc()
