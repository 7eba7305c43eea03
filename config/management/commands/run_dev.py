"""`make run`'s processes in one terminal (config/devrun.py); Ctrl-C stops them all."""

import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.devrun import address_in_use, dev_processes, dev_processes_run
from messaging.smtp.server import listeners


class Command(BaseCommand):
    help = "Run the web server, the Celery workers, celery-beat and the SMTP listeners of a development install"

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000, help="the web server's port on 127.0.0.1")

    def handle(self, *args, port, **options):
        if not settings.DEBUG:
            raise CommandError("run_dev is for development installs (DEBUG=true); deploy/systemd runs production")
        if address_in_use("127.0.0.1", port):
            raise CommandError(
                f"127.0.0.1:{port} is in use by another program: `make run PORT={port + 1}` picks another"
            )
        for listener in listeners():
            host, number = listener.host_port
            if address_in_use(host, number):
                setting = f"SMTP_{listener.name.upper()}_LISTEN"
                raise CommandError(
                    f"{host}:{number} (the SMTP {listener.name} listener) is in use by another program: "
                    f"`make run {setting}={host}:{number + 1}` picks another, `{setting}=` turns it off"
                )
        sys.exit(dev_processes_run(dev_processes(port=port)))
