from django.utils import timezone

from accounts.commands import OperatorCommand, duration
from messaging.models import Email
from messaging.sending.services import emails_retry_failed


class Command(OperatorCommand):
    help = (
        "Queue failed emails again, with a fresh attempt budget, through the same path as the admin's retry: each "
        "row goes back to QUEUED and its id to the delivery workers once committed. Only emails that failed within "
        "--since (their failure time) and whose body retention has not emptied them."
    )
    project_option = "optional"
    json_option = dry_run_option = progress_option = True

    def add_arguments(self, parser):
        # Only failed emails go again: a sent one would reach its recipient twice.
        parser.add_argument("--status", choices=[Email.Status.FAILED.value], default=Email.Status.FAILED.value)
        parser.add_argument("--since", type=duration, required=True, help="How far back: 30m, 24h, 7d")
        super().add_arguments(parser)

    def handle(self, *args, status, since, json, dry_run, **options):
        project = self.project()
        moment = timezone.now() - since
        total = emails_retry_failed(since=moment, project=project, dry_run=True)
        if dry_run:
            queued = total
        else:
            with self.progress(total=total, desc="emails") as bar:
                queued = emails_retry_failed(since=moment, project=project, on_batch=bar.update)
        if json:
            self.write_json({"dryRun": dry_run, "queued": queued, "since": moment.isoformat()})
            return
        verb = "Would queue" if dry_run else "Queued"
        self.stdout.write(f"{verb} {queued} failed email(s) again (failed since {moment.isoformat()})")
