"""Inbound mail into events: messages per second through the inbound listener's handler, on SQLite or PostgreSQL.

A fresh database (SQLite, or PostgreSQL: `BENCH_DATABASE`, default herald_bench_inbound) with one project and its
verified domain; the handler (`messaging.smtp.inbound`) mounted on
an aiosmtpd server on loopback as the SMTP server mounts it; `--clients` threads, each one smtplib connection as a
remote mail server's, hand over `--messages` messages in all (a 2 KB text and HTML message with a small attachment),
each to one address of the domain. DNS (SPF and DMARC of the sender's domain, which has no records) is answered by
the loopback DNS server of the tests. Prints the wall time, messages per second, and checks that every message is
one `email.received` event. Prints JSON (for `bench/compare.py`): the rate, and the CPU of this process (the
server; the clients are threads of it too, about a tenth) per message.

    python bench/inbound_bench.py [--database sqlite|postgres] [--messages 2000] [--clients 4] [--redis-db 6]
"""

import argparse
import json
import os
import smtplib
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import REDIS, bench_env, database_name, fresh_database, machine, setup_project


def message(number: int) -> bytes:
    mail = EmailMessage()
    mail["From"] = f"Sender {number % 50} <sender{number % 50}@remote.example>"
    mail["To"] = "support@bench.test"
    mail["Subject"] = f"Question {number}"
    mail["Message-ID"] = f"<q{number}@remote.example>"
    mail.set_content("Where is my order? " * 50)
    mail.add_alternative("<p>" + "Where is my order? " * 50 + "</p>", subtype="html")
    mail.add_attachment(b"x" * 300, maintype="application", subtype="octet-stream", filename="note.bin")
    return mail.as_bytes(policy=mail.policy.clone(linesep="\r\n"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--redis-db", default="6")
    args = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="inbound-bench-")
    database = {"DATABASE_URL": f"sqlite:///{folder}/herald.sqlite3"}
    if args.database == "postgres":
        fresh_database(database_name("herald_bench_inbound"))
        database = {}
    env = bench_env(
        database_name("herald_bench_inbound"),
        **database,
        CACHE_URL=f"{REDIS}/{args.redis_db}",
        SMTP_INBOUND_RATE_LIMIT_PER_MINUTE="0",
    )
    setup_project(env)
    os.environ.update(env)

    import django

    django.setup()
    from aiosmtpd.controller import Controller
    from django.conf import settings

    from config.tests.processes import free_port
    from contacts.models import Event
    from domains.tests.dnsserver import DnsServer
    from messaging.smtp.inbound import InboundHandler

    dns = DnsServer()
    settings.DNS_NAMESERVERS = [dns.address]
    port = free_port()
    controller = Controller(InboundHandler(), hostname="127.0.0.1", port=port)
    controller.start()
    raws = [message(number) for number in range(args.messages)]
    shares = [raws[client :: args.clients] for client in range(args.clients)]

    def client(share: list[bytes]) -> int:
        taken = 0
        with smtplib.SMTP("127.0.0.1", port, local_hostname="mx.remote.example") as smtp:
            for raw in share:
                smtp.sendmail("bounces@remote.example", ["support@bench.test"], raw)
                taken += 1
        return taken

    try:
        started, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            taken = sum(pool.map(client, shares))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        controller.stop()
        dns.stop()
    events = Event.objects.filter(name="email.received").count()
    assert taken == events == args.messages, (taken, events)
    print(
        json.dumps(
            {
                "benchmark": "inbound_bench",
                "database": args.database,
                "machine": machine(),
                "messages": args.messages,
                "clients": args.clients,
                "seconds": round(elapsed, 2),
                "messages_per_second": round(args.messages / elapsed, 1),
                "cpu_ms_per_message": round(cpu * 1000 / args.messages, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
