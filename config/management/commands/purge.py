from accounts.commands import OperatorCommand
from config.retention import RULES, retention_apply


class Command(OperatorCommand):
    help = (
        "Apply retention now: every rule of config/retention.py (rendered bodies, provider webhook receipts, expired "
        "idempotency keys, finished jobs and their uploads, and old events and email rows when turned on), in "
        "short batches, until nothing is left to remove. Prints what each rule removed."
    )
    project_option = "optional"
    json_option = dry_run_option = progress_option = True

    def handle(self, *args, json, dry_run, **options):
        project = self.project()
        with self.progress(total=len(RULES), desc="retention") as bar:
            done = retention_apply(
                project_id=project.id if project else None,
                dry_run=dry_run,
                on_rule=lambda rule, count: bar.update(1),
            )
        if json:
            self.write_json({"dryRun": dry_run, "removed": done})
            return
        verb = "would be" if dry_run else "were"
        for rule in RULES:
            count = done[rule.name]
            if count is None:
                self.stdout.write(f"{rule.name}: off ({rule.setting}=0)")
                continue
            age = f" (older than {rule.age} {rule.unit})" if rule.setting else ""
            self.stdout.write(f"{rule.name}: {count} {rule.what}{age}" + (" [dry run]" if dry_run else ""))
        total = sum(count or 0 for count in done.values())
        self.stdout.write(f"{total} row(s) {verb} removed or emptied")
