from accounts.commands import FOUND_PROBLEMS, OperatorCommand
from core.ids import uuid_or_none
from segments.models import Segment
from segments.services import segment_compute_preview, segment_recompute


class Command(OperatorCommand):
    help = (
        "Recompute segments now, as the periodic refresh does: a tracked dynamic segment records its entries and "
        "exits (with their segment.<slug>.entry/.exit events), any other has its member count taken again. Exit "
        "status 2 when a segment was busy (another run held it); run again later."
    )
    project_option = "optional"
    json_option = dry_run_option = progress_option = True

    def add_arguments(self, parser):
        parser.add_argument("--segment", help="Only this segment's id")
        super().add_arguments(parser)

    def handle(self, *args, segment, json, dry_run, **options):
        project = self.project()
        segments = Segment.objects.order_by("project_id", "created_at", "id")
        if project is not None:
            segments = segments.filter(project=project)
        if segment is not None:
            segments = segments.filter(pk=uuid_or_none(segment))
            if not segments.exists():
                raise self.fail(f'Segment "{segment}" not found')
        found = list(segments.values_list("id", "name", "type", "track_membership"))
        report = []
        for segment_id, name, kind, tracked in self.progress(found, total=len(found), desc="segments"):
            if dry_run:
                result = segment_compute_preview(segment=Segment.objects.get(pk=segment_id))
            else:
                result = segment_recompute(segment_id=segment_id)
            entry = {"id": str(segment_id), "name": name, "type": kind, "trackMembership": tracked}
            if result is None:
                entry["busy"] = True
            else:
                entry.update(added=result.added, removed=result.removed, total=result.total)
            report.append(entry)
        if json:
            self.write_json(report)
        else:
            self._print(report, dry_run)
        if any(entry.get("busy") for entry in report):
            raise self.fail("A segment was being recomputed by another run", FOUND_PROBLEMS)

    def _print(self, report: list[dict], dry_run: bool) -> None:
        if not report:
            self.stdout.write("No segment to recompute")
        would = "would " if dry_run else ""
        for entry in report:
            head = f"{entry['name']} ({entry['id']})"
            if entry.get("busy"):
                self.stdout.write(f"{head}: busy (another run holds it)")
            elif entry["trackMembership"] and entry["type"] == "DYNAMIC":
                self.stdout.write(
                    f"{head}: {entry['added']} {would}enter, {entry['removed']} {would}exit, {entry['total']} members"
                )
            else:
                self.stdout.write(f"{head}: {entry['total']} members ({would}recounted)")
