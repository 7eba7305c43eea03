from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Min
from django.utils import timezone

from messaging.insights.analytics import parse_moment
from messaging.insights.rollup import email_stats_rebuild
from messaging.models import Email


def _moment(value: str) -> datetime:
    moment = parse_moment(value)
    if moment is None:
        raise CommandError(f"Not an ISO 8601 date or timestamp: {value}")
    return moment


class Command(BaseCommand):
    help = (
        "Recount the hourly email stats (the analytics time series and /activity/stats) from the email rows, for a "
        "range of UTC hours, replacing what the range held. Use it for data that predates the stats, or after the "
        "incremental counting was interrupted."
    )

    def add_arguments(self, parser):
        parser.add_argument("--start", help="ISO date or timestamp (default: the oldest email)")
        parser.add_argument("--end", help="ISO date or timestamp, exclusive (default: now)")
        parser.add_argument("--project", help="Only this project's id (default: every project)")

    def handle(self, *args, start, end, project, **options):
        emails = Email.objects.filter(project_id=project) if project else Email.objects.all()
        end_at = _moment(end) if end else timezone.now()
        start_at = _moment(start) if start else emails.aggregate(first=Min("created_at"))["first"]
        if start_at is None:
            self.stdout.write("No emails: nothing to rebuild")
            return
        if start_at >= end_at:
            raise CommandError("--start must be before --end")
        rows = email_stats_rebuild(start=start_at, end=end_at, project_id=project)
        self.stdout.write(f"Rebuilt {rows} hourly row(s) from {start_at.isoformat()} to {end_at.isoformat()}")
