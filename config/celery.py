import gc
import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("herald")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_process_init.connect
def _freeze_loaded_objects(**kwargs):
    # As in the web workers (config/wsgi.py): what a worker process starts with lives as long as it does, and the
    # cycle collector need not scan it again and again.
    gc.freeze()


@signals.before_task_publish.connect
def _carry_request_id(headers=None, **kwargs):
    # A task queued while serving a request logs under that request's id.
    from config.api.middleware import current_request_id

    request_id = current_request_id()
    if headers is not None and request_id != "-":
        headers.setdefault("request_id", request_id)


@signals.task_prerun.connect
def _restore_request_id(task=None, **kwargs):
    from config.api.middleware import set_request_id

    # Eager tasks (tests, development) run inside the request: keep its id and put it back afterwards.
    task.request.herald_previous_request_id = set_request_id(
        getattr(task.request, "request_id", None) or task.request.id or "-"
    )


@signals.task_postrun.connect
def _forget_request_id(task=None, **kwargs):
    from config.api.middleware import reset_request_id

    previous = getattr(task.request, "herald_previous_request_id", None)
    if previous is not None:
        reset_request_id(previous)
