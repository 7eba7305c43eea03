from accounts.commands import OperatorCommand
from accounts.services import project_disable

OPERATOR_REASON = "OPERATOR"


class Command(OperatorCommand):
    help = (
        "Disable a project: every API call with its keys is refused (403 PROJECT_DISABLED) at once in every process, "
        "and nothing more is accepted for sending. `enable_project` undoes it."
    )
    project_option = "required"
    json_option = dry_run_option = True

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--reason", default=OPERATOR_REASON, help=f"Recorded as the reason (default {OPERATOR_REASON})"
        )

    def handle(self, *args, reason, json, dry_run, **options):
        project = self.project()
        reason = reason.strip() or OPERATOR_REASON
        changed = not project.disabled
        if changed and not dry_run:
            project_disable(project=project, reason=reason)
        if json:
            self.write_json({"id": str(project.id), "disabled": True, "changed": changed, "dryRun": dry_run})
            return
        if not changed:
            self.stdout.write(f"{project.name} ({project.id}) is already disabled ({project.disabled_reason})")
        else:
            self.stdout.write(
                f"{'Would disable' if dry_run else 'Disabled'} {project.name} ({project.id}), reason {reason[:100]}"
            )
