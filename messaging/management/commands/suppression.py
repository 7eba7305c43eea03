from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from accounts.commands import OperatorCommand
from contacts.services import normalize_email
from core.batches import keyset
from core.time import iso
from messaging.feedback.suppression import suppression_add, suppression_remove, suppressions_for
from messaging.models import Suppression


def _entry(row: Suppression) -> dict:
    return {"email": row.email, "reason": row.reason, "detail": row.detail, "createdAt": iso(row.created_at)}


class Command(OperatorCommand):
    help = (
        "Manage a project's suppression list: `add` stops all mail to the addresses (reason MANUAL), `remove` lets "
        "mail reach them again (their contacts stay unsubscribed), `list` shows the entries (all of them without "
        "addresses)."
    )
    project_option = "required"
    json_option = dry_run_option = True

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["add", "remove", "list"])
        parser.add_argument("addresses", nargs="*", metavar="ADDRESS")
        parser.add_argument("--reason", default="", help="Why (kept as the entry's detail), for add")
        super().add_arguments(parser)

    def handle(self, *args, action, addresses, reason, json, dry_run, **options):
        project = self.project()
        addresses = list(dict.fromkeys(normalize_email(address) for address in addresses))
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                raise self.fail(f'"{address}" is not an email address') from None
        if action != "list" and not addresses:
            raise self.fail(f"{action} needs at least one address")
        found = suppressions_for(project_id=project.id, emails=addresses)
        if action == "list":
            rows = self._listed(project, addresses)
            if json:
                self.write_json([_entry(row) for row in rows])
                return
            for row in rows:
                self.stdout.write(f"{row.email}\t{row.reason}\t{iso(row.created_at)}\t{row.detail}")
            return
        outcome = {}
        for address in addresses:
            if action == "add":
                outcome[address] = f"already suppressed ({found[address].reason})" if address in found else "added"
                if address not in found and not dry_run:
                    suppression_add(project=project, email=address, reason=Suppression.Reason.MANUAL, detail=reason)
            else:
                outcome[address] = "removed" if address in found else "not suppressed"
                if address in found and not dry_run:
                    suppression_remove(suppression=found[address])
        if json:
            self.write_json({"dryRun": dry_run, "addresses": outcome})
            return
        for address, result in outcome.items():
            self.stdout.write(f"{address}: {result}" + (" [dry run]" if dry_run else ""))

    def _listed(self, project, addresses: list[str]):
        rows = Suppression.objects.filter(project=project)
        if addresses:
            rows = rows.filter(email__in=addresses)
        # Read in pages along the (project, email) unique index: a list of any length in flat memory.
        return keyset(rows, key="email", batch_size=1000)
