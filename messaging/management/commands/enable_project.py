import logging

from accounts.commands import OperatorCommand
from messaging.feedback.reputation import project_reputation_reset

logger = logging.getLogger(__name__)


class Command(OperatorCommand):
    help = (
        "Enable a project that an operator or the reputation guard disabled. As the admin's re-enable, its bounce and "
        "complaint figures count from now on, so the mail already seen does not disable it again at once."
    )
    project_option = "required"
    json_option = dry_run_option = True

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--reason", default="", help="Why (written to the log)")

    def handle(self, *args, reason, json, dry_run, **options):
        project = self.project()
        changed, was = project.disabled, project.disabled_reason
        if changed and not dry_run:
            project_reputation_reset(project=project)
            logger.warning("Project %s enabled by an operator (was disabled for %s): %s", project.id, was, reason)
        if json:
            self.write_json({"id": str(project.id), "disabled": False, "changed": changed, "dryRun": dry_run})
            return
        if not changed:
            self.stdout.write(f"{project.name} ({project.id}) is already enabled")
        else:
            because = f": {reason}" if reason else ""
            self.stdout.write(
                f"{'Would enable' if dry_run else 'Enabled'} {project.name} ({project.id}), disabled for {was}{because}"
            )
