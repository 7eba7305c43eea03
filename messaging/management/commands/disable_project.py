from accounts.tenancy.services import project_disable
from messaging.management.project_state import ProjectStateCommand


class Command(ProjectStateCommand):
    help = (
        "Disable a project: every API call with its keys is refused (403 PROJECT_DISABLED) at once in every process, "
        "and nothing more is accepted for sending. `enable_project` undoes it."
    )
    disables, verb = True, "disable"
    reason_default = "OPERATOR"
    reason_help = "Recorded as the reason (default OPERATOR)"

    def change(self, project, reason):
        project_disable(project=project, reason=reason)
