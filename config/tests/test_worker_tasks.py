"""A worker knows every task the code declares and every task the schedule names: Celery's autodiscovery imports
each installed app's `tasks` module, and config/celery.py names the rooms (packages inside an app) that have one.
A task a worker does not know is refused when its message arrives."""

import json
import subprocess
import sys
from pathlib import Path

from django.apps import apps
from django.conf import settings

WORKER_IMPORTS = """
import importlib, json, sys
import django
django.setup()
from config.celery import app
from config.schedule import BEAT_SCHEDULE
app.loader.import_default_modules()
known = set(app.tasks)
for module in sys.argv[1:]:
    importlib.import_module(module)
print(json.dumps({
    "undiscovered": sorted(set(app.tasks) - known),
    "unscheduled": sorted(entry["task"] for entry in BEAT_SCHEDULE.values() if entry["task"] not in known),
}))
"""


def task_modules() -> list[str]:
    """Every `tasks` module the code declares: of the installed apps and of the rooms inside them."""
    base = Path(settings.BASE_DIR)
    paths = {
        path
        for config in apps.get_app_configs()
        if Path(config.path).is_relative_to(base)
        for path in Path(config.path).rglob("tasks.py")
        if "tests" not in path.relative_to(base).parts
    }
    return sorted(".".join(path.relative_to(base).with_suffix("").parts) for path in paths)


def test_a_worker_registers_every_task_and_every_scheduled_one():
    modules = task_modules()
    assert "messaging.sending.tasks" in modules
    result = subprocess.run(
        [sys.executable, "-c", WORKER_IMPORTS, *modules],
        cwd=settings.BASE_DIR,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings.base", "DEBUG": "true"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"undiscovered": [], "unscheduled": []}
