"""What `disable_project` and `enable_project` share: the project, `--reason`, and a report of whether anything
changed (running either twice changes nothing the second time)."""

from accounts.commands import OperatorCommand
from accounts.models import Project


class ProjectStateCommand(OperatorCommand):
    project_option = "required"
    json_option = dry_run_option = True
    # The state the command puts a project in, and its words for the report.
    disables: bool
    verb: str
    reason_default = ""
    reason_help = ""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--reason", default=self.reason_default, help=self.reason_help)

    def change(self, project: Project, reason: str) -> None:
        raise NotImplementedError

    def handle(self, *args, reason, json, dry_run, **options):
        project = self.project()
        reason = reason.strip() or self.reason_default
        changed, was = project.disabled != self.disables, project.disabled_reason
        if changed and not dry_run:
            self.change(project, reason)
        if json:
            self.write_json({"id": str(project.id), "disabled": self.disables, "changed": changed, "dryRun": dry_run})
        elif not changed:
            self.stdout.write(f"{project.name} ({project.id}) is already {self.verb}d")
        else:
            because = (
                f"reason {reason[:100]}" if self.disables else f"disabled for {was}" + (f": {reason}" if reason else "")
            )
            done = f"Would {self.verb}" if dry_run else f"{self.verb.capitalize()}d"
            self.stdout.write(f"{done} {project.name} ({project.id}), {because}")
