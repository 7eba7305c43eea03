"""What every operator command shares (docs/operations.md "Commands"): the project scope, `--json`, `--dry-run`,
progress on stderr, and the exit statuses.

Exit statuses: 0 done; 1 the command could not do its work (bad arguments, an unknown project, a refused input);
2 it did its work and found something wrong (failed rows, a failing check), which it printed.

Progress bars (tqdm) go to stderr, and only when stderr is a terminal or `--progress` is given: stdout carries the
result alone, so a script can read it (with `--json`, one JSON document).
"""

import json
import sys
from collections.abc import Iterable

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.models import Project
from core.ids import uuid_or_none

FAILED = 1
FOUND_PROBLEMS = 2


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

    def execute(self, *args, **options):
        self.options = options
        return super().execute(*args, **options)

    def run_from_argv(self, argv):
        # The message alone on stderr (Django would prefix "CommandError: "), with the command's exit status.
        try:
            super().run_from_argv(argv)
        except CommandError as exc:
            self.stderr.write(str(exc))
            sys.exit(exc.returncode)

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

    def progress(self, iterable: Iterable | None = None, *, total: int | None = None, desc: str = "") -> tqdm:
        stream = getattr(self.stderr, "_out", sys.stderr)
        shown = self.options.get("progress") or (hasattr(stream, "isatty") and stream.isatty())
        return tqdm(iterable, total=total, desc=desc, file=stream, disable=not shown, dynamic_ncols=True)
