"""What every operator command shares (docs/operations.md "Commands"): the project scope, `--json`, `--dry-run`,
progress on stderr, and the exit statuses.

Exit statuses: 0 done; 1 the command could not do its work (bad arguments, an unknown project, a refused input);
2 it did its work and found something wrong (failed rows, a failing check), which it printed.

Progress bars (tqdm) go to stderr, and only when stderr is a terminal or `--progress` is given: stdout carries the
result alone, so a script can read it (with `--json`, one JSON document).
"""

import argparse
import json
import re
import sys
from collections.abc import Iterable
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.models import Project
from core.ids import uuid_or_none

FAILED = 1
FOUND_PROBLEMS = 2
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration(value: str) -> timedelta:
    """An argparse type for spans such as `90s`, `30m`, `24h`, `7d`."""
    match = _DURATION.match(value.strip())
    if not match or int(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a span such as 30m, 24h or 7d")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


class OperatorCommand(BaseCommand):
    # Which of the shared options the command takes.
    project_option: str | None = None  # "required", "optional" or None
    json_option = False
    dry_run_option = False
    progress_option = False

    def add_arguments(self, parser):
        if self.project_option:
            parser.add_argument(
                "--project",
                required=self.project_option == "required",
                help="The project's id" + ("" if self.project_option == "required" else " (default: every project)"),
            )
        if self.json_option:
            parser.add_argument("--json", action="store_true", help="Print one JSON document on stdout")
        if self.dry_run_option:
            parser.add_argument("--dry-run", action="store_true", help="Show what would change, change nothing")
        if self.progress_option:
            parser.add_argument(
                "--progress", action="store_true", help="Show progress on stderr even when it is not a terminal"
            )

    # Django's checks would print their warnings on stderr before every run; `doctor` is the operators' check.
    requires_system_checks = []
    _from_argv = False

    def execute(self, *args, **options):
        self.options = options
        try:
            return super().execute(*args, **options)
        except CommandError as exc:
            if not self._from_argv or options.get("traceback"):
                raise
            # The message alone on stderr (Django would prefix "CommandError: "), with the command's exit status.
            self.stderr.write(str(exc))
            sys.exit(exc.returncode)

    def run_from_argv(self, argv):
        self._from_argv = True
        super().run_from_argv(argv)

    def fail(self, message: str, status: int = FAILED) -> CommandError:
        return CommandError(message, returncode=status)

    def project(self) -> Project | None:
        """The project of `--project`; None when the option was not given (every project)."""
        project_id = self.options.get("project")
        if project_id is None:
            return None
        project = Project.objects.filter(pk=uuid_or_none(project_id)).first()
        if project is None:
            raise self.fail(f'Project "{project_id}" not found')
        return project

    def write_json(self, value) -> None:
        self.stdout.write(json.dumps(value, default=str))

    def _stderr(self):
        return getattr(self.stderr, "_out", sys.stderr)

    def progress_shown(self) -> bool:
        """Whether progress is shown: with --progress, or when stderr is a terminal."""
        stream = self._stderr()
        return bool(self.options.get("progress")) or (hasattr(stream, "isatty") and stream.isatty())

    def progress(self, iterable: Iterable | None = None, *, total: int | None = None, desc: str = "") -> tqdm:
        return tqdm(
            iterable, total=total, desc=desc, file=self._stderr(), disable=not self.progress_shown(), dynamic_ncols=True
        )
