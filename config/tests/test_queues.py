"""Every task the code declares goes to one of the service's queues and has both time limits (config/queues.py,
docs/operations.md "Queues"): a task added without them fails here, not in production, where it would wait in a
queue no worker consumes or hold a worker's slot for ever."""

import importlib
import re
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import ProgrammingError
from django_celery_beat.schedulers import ModelEntry

from config.celery import app
from config.queues import DEFAULT, QUEUES, TASK_ROUTES
from config.schedule import BEAT_SCHEDULE
from config.tests.test_settings import fresh_interpreter
from config.tests.test_worker_tasks import task_modules
from core.tasks import time_limit_reached


@pytest.fixture(scope="module")
def tasks() -> dict:
    """Every task the service declares (not Celery's own, nor those tests declare for themselves)."""
    modules = set(task_modules())
    for module in modules:
        importlib.import_module(module)
    return {name: task for name, task in app.tasks.items() if task.__module__ in modules}


def _queue(name: str, options: dict | None = None) -> str:
    """The queue a publish of task `name` with `options` goes to, as Celery's router decides it."""
    return app.amqp.router.route(dict(options or {}), name)["queue"].name


def test_every_task_is_routed_to_a_queue_of_its_kind(tasks):
    assert set(tasks) == set(TASK_ROUTES), "a task without a route, or a route naming no task"
    for name in tasks:
        assert _queue(name) in set(QUEUES) - {DEFAULT}, name


def test_every_task_has_a_soft_and_a_hard_time_limit(tasks):
    for name, task in tasks.items():
        soft, hard = task.soft_time_limit, task.time_limit
        assert soft and hard, f"{name} has no soft and hard time limit"
        # The soft limit leaves the task time to put its work back; on Redis, a task still running when its message
        # is redelivered to another worker would run twice.
        assert 0 < soft < hard < settings.BROKER_VISIBILITY_TIMEOUT, name


def test_the_queues_tasks_are_published_to_are_the_routed_ones(tasks):
    # A publish keeps its own options (a campaign's delivery priority) and takes the queue of its route.
    assert _queue("messaging.tasks.deliver_emails_task", {"priority": 9}) == "delivery"
    assert app.amqp.router.route({"priority": 9}, "messaging.tasks.deliver_emails_task")["priority"] == 9
    assert _queue("workflows.tasks.advance_executions_task", {"countdown": 5}) == "workflows"
    assert _queue("contacts.tasks.contact_import_task") == "bulk"
    assert _queue("messaging.tasks.sweep_emails_task") == "periodic"


def test_the_engines_limits_leave_room_for_four_webhook_calls():
    """A step cut short at every try would run again for ever: with long webhook calls, the engine's limits grow."""
    read = "import django; django.setup(); from workflows.tasks import advance_executions_task as t; "
    limits = fresh_interpreter(read + "print(t.soft_time_limit, t.time_limit)", WEBHOOK_TIMEOUT_SECONDS="100")
    assert limits.split() == ["400.0", "430.0"]


def test_the_operations_page_lists_every_task_with_its_queue_and_limits(tasks):
    page = (Path(settings.BASE_DIR) / "docs" / "operations.md").read_text()
    listed = re.findall(r"^\| `([\w.]+)` \| (\w+) \| (\d+) \| (\d+) \|$", page, re.MULTILINE)
    assert sorted(listed) == sorted(
        (name, TASK_ROUTES[name]["queue"], str(task.soft_time_limit), str(task.time_limit))
        for name, task in tasks.items()
    )


@pytest.mark.django_db
def test_beat_publishes_each_entry_to_its_tasks_queue(tasks):
    """celery-beat sends the entries as django-celery-beat stores them, with the options of each row."""
    for name, entry in BEAT_SCHEDULE.items():
        stored = ModelEntry.from_entry(name, app=app, **entry)
        assert _queue(entry["task"], stored.options) == TASK_ROUTES[entry["task"]]["queue"], name


def test_an_error_raised_while_unwinding_from_the_soft_limit_is_the_limit():
    """Struck during a COMMIT, the limit leaves it in flight, and Django's atomic block then fails to leave the
    transaction with a database error: the task's handlers must still see the limit."""
    try:
        try:
            raise SoftTimeLimitExceeded()
        finally:
            raise ProgrammingError("can't change 'autocommit' now: connection in transaction status ACTIVE")
    except ProgrammingError as error:
        assert time_limit_reached(error)
    assert not time_limit_reached(ProgrammingError("a statement of its own failed"))
