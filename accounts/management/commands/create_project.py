import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.identity.users import user_get_or_create
from accounts.tenancy.services import project_create
from core.errors import ServiceError
from domains.services import domain_mark_verified_by_operator


class Command(BaseCommand):
    help = "Create a project (and its owner, if missing) and print its API keys. The secret key is shown only here."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--owner-email", required=True)
        parser.add_argument("--password", help="Password for a new owner; without it the owner cannot log in yet")
        parser.add_argument("--verified-domain", action="append", default=[], help="May be given more than once")
        parser.add_argument("--json", action="store_true", help="Print exactly one JSON object on stdout")

    def handle(self, *args, name, owner_email, password, verified_domain, json, **options):
        try:
            with transaction.atomic():
                owner, _ = user_get_or_create(email=owner_email, password=password)
                project, keys = project_create(name=name, owner=owner)
                for domain in verified_domain:
                    domain_mark_verified_by_operator(project=project, name=domain)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        if json:
            self.stdout.write(
                _dumps(
                    {
                        "id": str(project.id),
                        "name": project.name,
                        "publicKey": keys.public_key,
                        "secretKey": keys.secret_key,
                    }
                )
            )
            return
        self.stdout.write(f"Project:    {project.name} ({project.id})")
        self.stdout.write(f"Owner:      {owner.email}")
        self.stdout.write(f"Public key: {keys.public_key}")
        self.stdout.write(f"Secret key: {keys.secret_key}  (shown once; store it now)")
        for domain in verified_domain:
            self.stdout.write(f"Verified sender domain: {domain}")


def _dumps(value: dict) -> str:
    return json.dumps(value)
