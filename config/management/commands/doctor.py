from accounts.commands import FOUND_PROBLEMS, OperatorCommand
from config.doctor import NOT_CONFIGURED, PROBLEM, doctor_run

_MARKS = {"ok": "ok", PROBLEM: "PROBLEM", NOT_CONFIGURED: "not configured", "info": "info"}


class Command(OperatorCommand):
    help = (
        "Check the installation: database, pending migrations, Redis, the broker, celery-beat's last runs, the SMTP "
        "server (EHLO), DNS through the configured resolver, queue depths and stuck work (emails past their lease, "
        "jobs, overdue scheduled campaigns and workflow resumes), each with what to do about it. A component the "
        "installation does not use is 'not configured', never a failure. Exit status 2 when something is wrong."
    )
    json_option = True

    def add_arguments(self, parser):
        parser.add_argument(
            "--dns-name", default="example.com", help="The name resolved to test DNS (default example.com)"
        )
        super().add_arguments(parser)

    def handle(self, *args, dns_name, json, **options):
        findings = doctor_run(dns_name=dns_name)
        problems = [finding for finding in findings if finding.state == PROBLEM]
        if json:
            self.write_json({"healthy": not problems, "checks": [finding.as_dict() for finding in findings]})
        else:
            width = max(len(finding.name) for finding in findings)
            for finding in findings:
                self.stdout.write(f"{finding.name:<{width}}  {_MARKS[finding.state]:<14}  {finding.detail}")
                if finding.state == PROBLEM and finding.advice:
                    self.stdout.write(f"{'':<{width}}  {'':<14}  -> {finding.advice}")
            self.stdout.write(f"{len(problems)} problem(s)" if problems else "Everything checked is fine")
        if problems:
            raise self.fail(f"{len(problems)} problem(s): " + ", ".join(f.name for f in problems), FOUND_PROBLEMS)
