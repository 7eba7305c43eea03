import asyncio

from django.core.management.base import BaseCommand, CommandError

from messaging.smtp.processes import Processes
from messaging.smtp.server import listeners, serve


class Command(BaseCommand):
    help = (
        "Run the SMTP listeners (docs/smtp.md) in the foreground until SIGTERM or SIGINT: submission "
        "(SMTP_SUBMISSION_LISTEN) and inbound mail (SMTP_INBOUND_LISTEN); an empty address turns one off."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--processes",
            type=int,
            default=1,
            help="server processes sharing the listening addresses (SO_REUSEPORT); one per core the SMTP edge may "
            "use (default 1: one process, one event loop)",
        )

    def handle(self, *args, processes: int, **options):
        configured = listeners()
        if not configured:
            raise CommandError("No SMTP listener is configured: set SMTP_SUBMISSION_LISTEN or SMTP_INBOUND_LISTEN")
        if processes < 1:
            raise CommandError("--processes must be 1 or more")
        if processes == 1:
            asyncio.run(serve(configured, on_start=self._started))
        else:
            parent = Processes(configured, processes)
            parent.signals()
            self._started(parent, [(listener, listener.host_port) for listener in parent.listeners], processes)
            parent.run()
        self.stdout.write("SMTP server stopped")

    def _started(self, server, bound, processes: int = 1):
        tls = "STARTTLS offered" if server.config.tls is not None else "no TLS"
        where = f", {processes} processes" if processes > 1 else ""
        for listener, (host, port) in bound:
            self.stdout.write(f"SMTP {listener.name} listening on {host}:{port} ({tls}{where})")
        self.stdout.flush()
