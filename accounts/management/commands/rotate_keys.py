from accounts.commands import OperatorCommand
from accounts.tenancy.services import project_regenerate_keys


class Command(OperatorCommand):
    help = (
        "Replace both API keys of a project. The old keys fail at once in every process (the shared key cache marks "
        "them stale); the new secret key is printed here only, once."
    )
    project_option = "required"
    json_option = dry_run_option = True

    def handle(self, *args, json, dry_run, **options):
        project = self.project()
        if dry_run:
            self.stdout.write(f"Would replace both keys of {project.name} ({project.id}); nothing changed")
            return
        keys = project_regenerate_keys(project=project)
        if json:
            self.write_json({"publicKey": keys.public_key, "secretKey": keys.secret_key})
            return
        self.stdout.write(f"Project:    {project.name} ({project.id})")
        self.stdout.write(f"Public key: {keys.public_key}")
        self.stdout.write(f"Secret key: {keys.secret_key}  (shown once; store it now)")
