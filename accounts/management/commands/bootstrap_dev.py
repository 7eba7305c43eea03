"""First-run set-up for `make run`: an admin login and a development project, printed on every start.

The secret key is stored only as a hash, so the keys shown at later starts come from `var/dev-credentials.json`,
written once for this development install (never used outside DEBUG).
"""

import json
import secrets

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.identity.users import user_get_or_create
from accounts.models import User
from accounts.tenancy.services import project_create
from domains.services import domain_mark_verified_by_operator

ADMIN_EMAIL = "admin@localhost.test"
# A sender domain vouched for on the development install only, so that /v1/send works right after `make run`.
DEV_SENDER_DOMAIN = "herald.test"


class Command(BaseCommand):
    help = "Create the development admin and project on first run and print their credentials"

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("bootstrap_dev is for development installs (DEBUG=true) only")
        path = settings.VAR_DIR / "dev-credentials.json"
        start_afresh = "`make clean-dev` starts the development install afresh (database and credentials)"
        if path.exists():
            credentials = json.loads(path.read_text())
        elif User.objects.filter(email=ADMIN_EMAIL).exists():
            # The secret key is stored only as a hash: without the file, the development project's keys are lost.
            raise CommandError(f"{path} is gone but the development database is still here; {start_afresh}")
        else:
            password = secrets.token_urlsafe(12)
            admin, created = user_get_or_create(email=ADMIN_EMAIL, password=password)
            if not created:
                admin.set_password(password)
            admin.is_staff = admin.is_superuser = True
            admin.save()
            project, keys = project_create(name="Development", owner=admin)
            domain_mark_verified_by_operator(project=project, name=DEV_SENDER_DOMAIN)
            credentials = {
                "adminEmail": admin.email,
                "adminPassword": password,
                "projectId": str(project.id),
                "publicKey": keys.public_key,
                "secretKey": keys.secret_key,
            }
            path.write_text(json.dumps(credentials, indent=2))
            path.chmod(0o600)
        if not User.objects.filter(email=credentials["adminEmail"]).exists():
            raise CommandError(f"{path} does not match the database; {start_afresh}")
        base = settings.PUBLIC_URL
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "Herald development install",
                    f"  API:         {base}   (docs: {base}/api/docs/)",
                    f"  Admin:       {base}/admin/  {credentials['adminEmail']} / {credentials['adminPassword']}",
                    f"  Project:     Development ({credentials['projectId']})",
                    f"  Public key:  {credentials['publicKey']}",
                    f"  Secret key:  {credentials['secretKey']}",
                    f"  Sender:      hello@{DEV_SENDER_DOMAIN} (domain verified for development)",
                    f"  Try:         curl -H 'Authorization: Bearer {credentials['secretKey']}' {base}/contacts",
                    f"  Mail goes to {settings.EMAIL_URL} (set EMAIL_URL=smtp://host:port for a real server)",
                    "",
                ]
            )
        )
