from accounts.commands import FOUND_PROBLEMS, OperatorCommand
from domains.models import Domain
from domains.names import normalize_domain
from domains.records import records_json
from domains.services import DomainClaimLost, domain_check, domain_records_lookup


def _looked_up(domain: Domain) -> list[dict]:
    """The records as `records_json` shows them, from a lookup that stores nothing."""
    return [
        {
            "type": record.type,
            "name": record.name,
            "value": record.value,
            "purpose": str(record.purpose),
            "required": record.required,
            "status": str(result.status),
            "lastError": result.last_error,
        }
        for record, result in domain_records_lookup(domain=domain).values()
    ]


class Command(OperatorCommand):
    help = (
        "Check sender domains' DNS records now, as the periodic check does (a domain whose DKIM record is found "
        "becomes verified), through the configured resolver (DNS_NAMESERVERS), and print each record's state. "
        "Without --all or --domain: the pending domains. Exit status 2 when a checked domain is not verified."
    )
    project_option = "optional"
    json_option = dry_run_option = progress_option = True

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--all", action="store_true", help="Every domain, verified ones too")
        which.add_argument("--domain", help="Only this domain name (every project's claim of it, unless --project)")
        super().add_arguments(parser)

    def handle(self, *args, all, domain, json, dry_run, **options):
        project = self.project()
        domains = Domain.objects.select_related("project").order_by("name", "created_at")
        if project is not None:
            domains = domains.filter(project=project)
        if domain:
            domains = domains.filter(name=normalize_domain(domain) or domain.strip().lower())
        elif not all:
            domains = domains.filter(status=Domain.Status.PENDING)
        found = list(domains)
        if domain and not found:
            raise self.fail(f'Domain "{domain}" not found')
        report = [self._check(one, dry_run) for one in self.progress(found, total=len(found), desc="domains")]
        if json:
            self.write_json(report)
        else:
            self._print(report, dry_run)
        if any(entry["status"] != Domain.Status.VERIFIED for entry in report):
            raise self.fail("Not every domain checked is verified", FOUND_PROBLEMS)

    def _check(self, domain: Domain, dry_run: bool) -> dict:
        entry = {"domain": domain.name, "id": str(domain.id), "projectId": str(domain.project_id)}
        if dry_run:
            return {**entry, "status": domain.status, "verifiedBy": _by(domain), "records": _looked_up(domain)}
        try:
            checked = domain_check(domain=domain)
        except DomainClaimLost as lost:
            return {**entry, "status": "removed", "verifiedBy": None, "error": lost.message, "records": []}
        return {**entry, "status": checked.status, "verifiedBy": _by(checked), "records": records_json(checked)}

    def _print(self, report: list[dict], dry_run: bool) -> None:
        if not report:
            self.stdout.write("No domain to check")
        for entry in report:
            suffix = " [dry run: nothing stored]" if dry_run else ""
            self.stdout.write(f"{entry['domain']} ({entry['projectId']}): {entry['status']}{suffix}")
            if entry["verifiedBy"] == Domain.Method.OPERATOR:
                # Its records may well be missing (a development domain): say why it counts as verified anyway.
                self.stdout.write(
                    "  verified by an operator: its records are checked, but one missing never demotes it"
                )
            if entry.get("error"):
                self.stdout.write(f"  {entry['error']}")
            for record in entry["records"]:
                required = "required" if record["required"] else "recommended"
                line = (
                    f"  {record['purpose']:<12} {record['type']:<5} {record['name']}: {record['status']} ({required})"
                )
                self.stdout.write(line + (f" - {record['lastError']}" if record["lastError"] else ""))


def _by(domain: Domain) -> str | None:
    """How a verified domain was verified (`dns`, `operator`), None for one that is not."""
    return domain.verification_method if domain.status == Domain.Status.VERIFIED else None
