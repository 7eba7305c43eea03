"""`export_contacts` lives with segments, not contacts: its `--segment` scope needs the condition language, and the
contacts app sits below segments (docs/architecture.md)."""

import sys

from accounts.commands import OperatorCommand
from contacts.models import Contact
from contacts.selectors import EXPORT_COLUMNS, contact_data_keys, contacts_export_rows
from core.csv import csv_writer
from core.ids import uuid_or_none
from core.replica import replica_reads
from segments.models import Segment
from segments.selectors import segment_members


class Command(OperatorCommand):
    help = (
        "Write a project's contacts (or a segment's members) as CSV on stdout, or to --output: the columns email, "
        "subscribed, createdAt, updatedAt, then one per data key, in email order; a cell a spreadsheet would run as a formula starts with a '. Streams in batches, so memory "
        "stays flat at any number of contacts. (Re-imported, createdAt and updatedAt would become data keys: drop "
        "those columns first.)"
    )
    project_option = "required"
    progress_option = True

    def add_arguments(self, parser):
        parser.add_argument("--segment", help="Only this segment's members (live, for a dynamic segment)")
        parser.add_argument("--output", help="Write to this file instead of stdout")
        super().add_arguments(parser)

    def handle(self, *args, segment, output, **options):
        project = self.project()
        contacts = Contact.objects.filter(project=project)
        if segment is not None:
            found = Segment.objects.filter(project=project, pk=uuid_or_none(segment)).first()
            if found is None:
                raise self.fail(f'Segment "{segment}" not found')
            contacts = segment_members(segment=found)
        self._write(contacts, output)

    # The project and segment are found on the primary (one created a moment ago is there); the contacts come from
    # the replica when there is one, and may miss the last seconds of writes (docs/scaling.md, "Read replica").
    @replica_reads()
    def _write(self, contacts, output) -> None:
        keys = contact_data_keys(contacts=contacts)
        stream = open(output, "w", newline="", encoding="utf-8") if output else getattr(self.stdout, "_out", sys.stdout)  # noqa: SIM115 - closed below
        try:
            writer = csv_writer(stream)
            writer.writerow([*EXPORT_COLUMNS, *keys])
            total = contacts.count() if self.progress_shown() else None
            written = 0
            with self.progress(total=total, desc="contacts") as bar:
                for row in contacts_export_rows(contacts=contacts, keys=keys):
                    writer.writerow(row)
                    written += 1
                    bar.update(1)
        finally:
            if output:
                stream.close()
        if output:
            # stdout is free when the CSV went to a file: say what went where.
            self.stdout.write(f"Wrote {written} contact(s) to {output}")
