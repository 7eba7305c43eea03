import asyncio

from django.core.management.base import BaseCommand, CommandError

from messaging.smtp.server import listeners, serve


class Command(BaseCommand):
    help = (
        "Run the SMTP listeners (docs/smtp.md) in the foreground until SIGTERM or SIGINT: submission "
        "(SMTP_SUBMISSION_LISTEN) and inbound mail (SMTP_INBOUND_LISTEN); an empty address turns one off."
    )

    def handle(self, *args, **options):
        configured = listeners()
        if not configured:
            raise CommandError("No SMTP listener is configured: set SMTP_SUBMISSION_LISTEN or SMTP_INBOUND_LISTEN")

        def started(server, bound):
            tls = "STARTTLS offered" if server.config.tls is not None else "no TLS"
            for listener, (host, port) in bound:
                self.stdout.write(f"SMTP {listener.name} listening on {host}:{port} ({tls})")
            self.stdout.flush()

        asyncio.run(serve(configured, on_start=started))
        self.stdout.write("SMTP server stopped")
