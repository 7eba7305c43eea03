import logging

from messaging.feedback.reputation import project_reputation_reset
from messaging.management.project_state import ProjectStateCommand

logger = logging.getLogger(__name__)


class Command(ProjectStateCommand):
    help = (
        "Enable a project that an operator or the reputation guard disabled. As the admin's re-enable, its bounce and "
        "complaint figures count from now on, so the mail already seen does not disable it again at once."
    )
    disables, verb = False, "enable"
    reason_help = "Why (written to the log)"

    def change(self, project, reason):
        was = project.disabled_reason
        project_reputation_reset(project=project)
        logger.warning("Project %s enabled by an operator (was disabled for %s): %s", project.id, was, reason)
