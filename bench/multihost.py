"""The multi-host drill: two web hosts and two worker hosts, each a network namespace of this machine, a beat on
each; sends, tracks and a scheduled campaign; then a worker host is lost and the beat that schedules is killed; then
the books.

    python bench/multihost.py [--sends 3000] [--tracks 3000] [--contacts 10000] [--seconds 60]

Must run as root (it creates network namespaces), with `ip` and `redis-server` installed and PostgreSQL on this
machine. The topology:

- a bridge `hdrill-br` in the root namespace, 10.231.0.1/24, and four namespaces joined to it by veth pairs, each
  with its own address and loopback: `hdrill-web1` (10.231.0.11) and `hdrill-web2` (.12) run gunicorn
  (`config/gunicorn.py`, `--web-workers` workers, 2 by default) and celery-beat; `hdrill-work1` (.21) and
  `hdrill-work2` (.22) run the two Celery workers as `deploy/systemd` starts them (`delivery` alone, and the other
  queues) and celery-beat. Every process runs as `ip netns exec hdrill-<host> <command>`;
- in the root namespace, bound to the bridge's address only: a redis-server of the drill's own (cache and broker, no
  persistence), a TCP forwarder to PostgreSQL (`bench/tcp_forward.py`; PostgreSQL itself listens on loopback), and an
  SMTP server that records every message. The hosts reach them over their links only.

So that a run takes minutes, the timings are shortened (`DRILL_ENV`, `bench/multihost_settings.py`, printed under
`settings`): the beat's lease 6 s and its retry 1 s; the grace periods and leases of `bench/chaos.py` (`CHAOS_ENV`),
the delivery lease 6 s; the beat's sweepers and campaign entries every 2 s; a task a lost worker took is handed to
another after 10 s (Redis's visibility timeout, an hour in production), once the sweeper gave its emails to another; delivery tasks of 10 emails.

The drill seeds `--contacts` contacts, then, from the root namespace, calls `/v1/send` and `/v1/track` on the two web
hosts in turn (`--sends` and `--tracks` spread evenly over `--seconds`, 4 threads, every third with an
Idempotency-Key) and schedules a campaign to the seeded contacts a third of the way into the load, so that the beat's
`start-due-campaigns` starts it. While the campaign is being delivered it SIGKILLs every process of the worker host
`work1` (the host is lost: its workers, their pools and its beat) and the beat that holds the lease, wherever it runs,
and keeps the load going to the end. Then, once nothing is left to do and the lost host's tasks were handed out again
(or after `--settle` seconds), the books: every accepted send stored once and delivered once, every campaign email
delivered once (a repeat only as `bench/chaos.py` allows it: the message a killed delivery process had handed over,
with its one Message-ID), every accepted track recorded once, the campaign started once, by the beat, no run of a
periodic entry published twice (the probe entry of `config/tests/beat_probe.py`, every second) and every recorded run
sent, the lease taken over within BEAT_LEASE_SECONDS + BEAT_LEASE_RETRY_SECONDS (+ 1.5 s for a busy machine), no email
left QUEUED or SENDING and none failed. Prints JSON; exits 1 when a check fails. Namespaces, the bridge and every
process are removed on every way out.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.campaign_bench import CAMPAIGN, SEED_CONTACTS
from bench.chaos import CHAOS_ENV, deliveries
from bench.serve import PG, PYTHON, ROOT, bench_env, database_name, fresh_database, machine, setup_project
from config.tests.load import Load
from config.tests.processes import (
    RedisServer,
    celery_beat,
    children,
    gunicorn_server,
    unit_workers,
    wait_until,
    worker_process,
)

DATABASE = database_name("herald_multihost")  # BENCH_DATABASE: a run beside another one
BRIDGE, GATEWAY = "hdrill-br", "10.231.0.1"
HOSTS = {"web1": "10.231.0.11", "web2": "10.231.0.12", "work1": "10.231.0.21", "work2": "10.231.0.22"}
LOST = "work1"
LEASE, RETRY, SLACK = 6, 1, 1.5
DRILL_ENV = {
    **CHAOS_ENV,
    "DJANGO_SETTINGS_MODULE": "bench.multihost_settings",
    "BEAT_LEASE_SECONDS": str(LEASE),
    "BEAT_LEASE_RETRY_SECONDS": str(RETRY),
    # Delivery tasks of 10 emails rather than 100: a campaign of a few hundred is tens of tasks, so the lost host
    # holds some it took and had not done (a visibility timeout later, another worker gets them again).
    "DELIVERY_BATCH_SIZE": "10",
    # The lost host's claimed rows are swept 6 s after its last renewal rather than chaos's 20 s: sending ten
    # messages to the sink on the bridge takes milliseconds, and the claim is renewed every sixth of the lease.
    "DELIVERY_LEASE_SECONDS": "6",
}
AUDIENCE = {
    "logic": "AND",
    "groups": [{"filters": [{"field": "email", "operator": "contains", "value": "@sink.test"}]}],
}


def ip(*args: str, namespace: str | None = None, check: bool = True) -> str:
    inside = ["ip", "netns", "exec", namespace] if namespace else []
    return subprocess.run([*inside, "ip", *args], check=check, capture_output=True, text=True).stdout


def namespace(host: str) -> str:
    return f"hdrill-{host}"


def namespace_pids(host: str) -> list[int]:
    return [int(pid) for pid in ip("netns", "pids", namespace(host), check=False).split()]


def kill(pids: list[int], signum: int = signal.SIGKILL) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signum)


def tear_down() -> None:
    """Every process left in the hosts' namespaces killed, the namespaces (with their veth pairs) and the bridge
    deleted; what is not there is skipped, so this also clears what a run killed before its end left behind."""
    for host in HOSTS:
        kill(namespace_pids(host))
        ip("netns", "del", namespace(host), check=False)
    ip("link", "del", BRIDGE, check=False)


@contextmanager
def network():
    """The bridge and the hosts' namespaces, each joined to it by a veth pair: `eth0` inside, `hd-<host>` outside."""
    tear_down()
    try:
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")
        for host, address in HOSTS.items():
            ip("netns", "add", namespace(host))
            ip("link", "add", f"hd-{host}", "type", "veth", "peer", "name", "eth0", "netns", namespace(host))
            ip("link", "set", f"hd-{host}", "master", BRIDGE, "up")
            ip("addr", "add", f"{address}/24", "dev", "eth0", namespace=namespace(host))
            ip("link", "set", "eth0", "up", namespace=namespace(host))
            ip("link", "set", "lo", "up", namespace=namespace(host))
        yield
    finally:
        tear_down()


class Host:
    """One host's processes, started inside its namespace; its logs in `logs`."""

    def __init__(self, name: str, env: dict, logs: Path, stack: ExitStack, web_workers: int):
        self.name, self.address, self.env, self.logs, self.stack = name, HOSTS[name], env, logs, stack
        self.web_workers = web_workers
        self.prefix = ("ip", "netns", "exec", namespace(name))
        self.beat = None
        self.workers: dict[str, subprocess.Popen] = {}  # by the name of the unit's worker: delivery, work
        self.base = None

    def _log(self, role: str):
        return self.stack.enter_context((self.logs / f"{self.name}-{role}.log").open("w"))

    def start_beat(self) -> None:
        schedule = self.logs / f"{self.name}-celerybeat-schedule"
        self.beat = self.stack.enter_context(
            celery_beat(schedule, stderr=self._log("beat"), prefix=self.prefix, **{**self.env, "LOG_LEVEL": "INFO"})
        )

    def start_web(self) -> None:
        self.base = self.stack.enter_context(
            gunicorn_server(
                workers=self.web_workers,
                stderr=self._log("web"),
                prefix=self.prefix,
                host=self.address,
                timeout=120,
                **self.env,
            )
        )

    def start_workers(self) -> None:
        for command in unit_workers(host=self.name):
            role = command[command.index("-n") + 1].split("@")[0]
            self.workers[role] = self.stack.enter_context(
                worker_process(command, stderr=self._log(role), prefix=self.prefix, **self.env)
            )

    def ready(self) -> bool:
        """Its beat leads or stands by, and each worker started its pool."""
        beat = (self.logs / f"{self.name}-beat.log").read_text()
        return ("took the lease" in beat or "standing by" in beat) and all(
            len(children(worker.pid)) >= int(worker.args[worker.args.index("--concurrency") + 1])
            for worker in self.workers.values()
        )

    def stop(self) -> None:
        """SIGTERM to each process the drill started on the host, all at once (each context then waits for its own:
        one after the other, the warm shutdowns would add up)."""
        kill([pid for pid in namespace_pids(self.name) if _parent(pid) == os.getpid()], signal.SIGTERM)

    def lose(self) -> int:
        """SIGKILL every process of the host at once; the number of the delivery worker's pool processes killed."""
        delivery_pool = len(children(self.workers["delivery"].pid))
        kill(namespace_pids(self.name))
        for process in [*self.workers.values(), self.beat]:
            process.wait()
        return delivery_pool

    def sent_lines(self) -> Counter:
        """The runs this host's beat sent, by entry (celery-beat logs each `Sending due task <entry>` as it sends)."""
        lines = (self.logs / f"{self.name}-beat.log").read_text().splitlines()
        return Counter(
            line.split("Sending due task ", 1)[1].split(" ")[0] for line in lines if "Sending due task" in line
        )


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except FileNotFoundError:  # it ended meanwhile
        return None


def host_env(base_env: dict, redis: RedisServer, forward_port: int, sink) -> dict:
    """The hosts' environment: every service at the bridge's address."""
    pg = urlsplit(PG)
    auth = pg.netloc.rsplit("@", 1)[0] + "@" if "@" in pg.netloc else ""
    return {
        **base_env,
        "DATABASE_URL": f"{pg.scheme}://{auth}{GATEWAY}:{forward_port}/{DATABASE}",
        "CACHE_URL": redis.url(0),
        "CELERY_BROKER_URL": redis.url(1),
        "EMAIL_URL": f"smtp://{sink.host}:{sink.port}",
        "ALLOWED_HOSTS": ",".join(HOSTS.values()),
    }


@contextmanager
def pg_forwarder(port: int):
    pg = urlsplit(PG)
    target = f"{pg.hostname or '127.0.0.1'}:{pg.port or 5432}"
    process = subprocess.Popen([PYTHON, "bench/tcp_forward.py", f"{GATEWAY}:{port}", target], cwd=ROOT)
    try:
        wait_until(lambda: _connects(GATEWAY, port), timeout=10, what="the PostgreSQL forwarder")
        yield
    finally:
        process.kill()
        process.wait()


def _connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def schema_copy(source: str) -> None:
    """The schema of `source`, a migrated database, with its record of the migrations applied, into the drill's
    fresh database: as `migrate` would make it, in a fraction of its time (`migrate` then finds nothing to do)."""
    dump = ["pg_dump", "--no-owner", "--no-privileges", source]
    schema = subprocess.run([*dump, "--schema-only"], check=True, capture_output=True).stdout
    applied = subprocess.run([*dump, "--data-only", "-t", "django_migrations"], check=True, capture_output=True).stdout
    psql = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", f"{PG}/{DATABASE}"]
    subprocess.run(psql, input=schema + applied, check=True, capture_output=True)


def schedule_campaign(base: str, secret_key: str, *, after: float) -> tuple[str, datetime]:
    """A campaign to the seeded contacts, scheduled `after` seconds ahead: the beat's `start-due-campaigns` starts
    it."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret_key}"}, timeout=30) as client:
        audience = {"audienceType": "FILTERED", "audienceCondition": AUDIENCE}
        created = client.post("/campaigns", json={**CAMPAIGN, **audience})
        assert created.status_code == 201, created.text
        campaign_id = created.json()["data"]["id"]
        when = datetime.now(UTC) + timedelta(seconds=after)
        scheduled = client.post(f"/campaigns/{campaign_id}/send", json={"scheduledFor": when.isoformat()})
        assert scheduled.status_code == 200, scheduled.text
    return campaign_id, when


def delivering(campaign_id: str) -> bool:
    """Some of the campaign's emails are sent and some are not yet."""
    from messaging.models import Email

    emails = Email.objects.filter(campaign_id=campaign_id)
    return (
        emails.filter(status=Email.Status.SENT).exists()
        and emails.filter(status__in=[Email.Status.QUEUED, Email.Status.SENDING]).exists()
    )


def leader():
    from config.leases import BEAT_LEASE, lease_get

    lease = lease_get(name=BEAT_LEASE)
    return lease if lease is not None and not lease.expired else None


def settled(campaign_id: str) -> bool:
    from accounts.models import Job
    from campaigns.models import Campaign, CampaignStatus
    from messaging.models import Email

    return (
        not Email.objects.filter(status__in=[Email.Status.QUEUED, Email.Status.SENDING]).exists()
        and not Job.objects.exclude(status__in=[Job.Status.COMPLETED, Job.Status.FAILED]).exists()
        and Campaign.objects.filter(pk=campaign_id, status=CampaignStatus.SENT).exists()
    )


def books(load: Load, sink, campaign_id: str, scheduled_for: datetime, contacts: int, hosts: dict, lost: dict) -> dict:
    from django_celery_beat.models import PeriodicTask

    from accounts.models import Job
    from campaigns.models import Campaign, CampaignStatus
    from config.tests.beat_probe import PROBE, closest, drain, published
    from contacts.models import Event
    from messaging.models import Email

    sends, tracks = load.answered("send"), load.answered("track")
    unanswered = load.answered("send", accepted=False) | load.answered("track", accepted=False)
    stored = Counter(Email.objects.filter(campaign_id__isnull=True).values_list("to_email", flat=True))
    campaign_emails = Counter(Email.objects.filter(campaign_id=campaign_id).values_list("to_email", flat=True))
    recorded = Counter(Event.objects.filter(name="visit").values_list("contact__email", flat=True))
    delivered, repeated, repeats_allowed = deliveries(sink, pool_processes_killed=lost["delivery pool processes"])
    pending = Email.objects.filter(status__in=[Email.Status.QUEUED, Email.Status.SENDING]).count()
    failed = Email.objects.filter(status=Email.Status.FAILED).count()
    campaign = Campaign.objects.get(pk=campaign_id)
    fan_outs = Job.objects.filter(type="campaign_send").count()
    probes = published(drain())
    runs = dict(PeriodicTask.objects.filter(total_run_count__gt=0).values_list("name", "total_run_count"))
    sent = sum((host.sent_lines() for host in hosts.values()), Counter())
    unsent = {name: runs[name] - sent[name] for name in runs}
    takeover = lost["takeover after"]
    checks = {
        "every accepted send stored once": all(stored[email] == 1 for email in sends),
        "every accepted track recorded once": all(recorded[email] == 1 for email in tracks),
        "nothing stored twice": max([1, *stored.values(), *campaign_emails.values(), *recorded.values()]) == 1,
        "nothing stored that was refused": set(stored) <= sends | unanswered and set(recorded) <= tracks | unanswered,
        "every stored email delivered, none failed": set(delivered) == set(stored) | set(campaign_emails)
        and failed == 0,
        "a repeat only of a killed worker's message, with its Message-ID": repeats_allowed,
        "the campaign started once, by the beat, to every contact": fan_outs == 1
        and campaign.job_id is not None
        and campaign.sent_at >= scheduled_for
        and campaign.status == CampaignStatus.SENT
        and len(campaign_emails) == contacts == campaign.total_recipients,
        # Two beats publishing one run of the probe would publish within milliseconds; its runs are 1 s apart. A
        # leader killed between recording a run and sending it loses that run (docs/operations.md "Beat").
        "no run of a periodic entry published twice": closest(probes) > 0.5
        and 0 <= runs.get(PROBE, 0) - len(probes) <= 1,
        "every recorded run sent by one beat, but the killed leader's last": all(n >= 0 for n in unsent.values())
        and sum(unsent.values()) <= 1,
        f"the lease taken over within {LEASE + RETRY} s (+ {SLACK} s)": takeover is not None
        and takeover <= LEASE + RETRY + SLACK,
        "no email left QUEUED or SENDING": pending == 0,
    }
    return {
        "answers": dict(Counter(load.answers.values())),
        "sends accepted": len(sends),
        "tracks accepted": len(tracks),
        "requests unanswered": len(unanswered),
        "emails stored": sum(stored.values()) + sum(campaign_emails.values()),
        "campaign emails": sum(campaign_emails.values()),
        "emails delivered": sum(delivered.values()),
        "emails delivered twice": len(repeated),
        "track events stored": sum(recorded.values()),
        "campaign": {"status": campaign.status, "fan-out jobs": fan_outs, "recipients": campaign.total_recipients},
        "probe": {"runs": runs.get(PROBE, 0), "published": len(probes), "closest publications s": closest(probes)},
        "runs by entry": runs,
        "runs sent by each beat": {name: dict(host.sent_lines()) for name, host in hosts.items()},
        "checks": checks,
    }


def drill(args, logs: Path) -> dict:
    from messaging.sending.tests.smtp import start_sink

    report = {"settings": DRILL_ENV, "sizes": vars(args)}
    started = time.monotonic()
    with network(), ExitStack() as stack:
        redis = RedisServer(host=GATEWAY, port=args.redis_port)
        redis.start()
        stack.callback(lambda: redis.process.poll() is None and redis.stop())
        stack.enter_context(pg_forwarder(args.pg_port))
        sink, controller = start_sink(host=GATEWAY)
        stack.callback(controller.stop)
        root_env = bench_env(DATABASE, CACHE_URL=redis.url(0), CELERY_BROKER_URL=redis.url(1), **DRILL_ENV)
        fresh_database(DATABASE)
        if args.schema_from:
            schema_copy(args.schema_from)
        project = setup_project(root_env)
        os.environ.update(root_env)  # this process reads the books from the same database, directly
        import django

        django.setup()
        from django.db import connection

        from config.tests.beat_probe import probe_queue_declare

        with connection.cursor() as cursor:
            cursor.execute(SEED_CONTACTS, {"project": project["id"], "count": args.contacts})
        probe_queue_declare(redis.url(1))
        report["database ready in"] = round(time.monotonic() - started, 1)
        env = host_env(root_env, redis, args.pg_port, sink)
        hosts = {name: Host(name, env, logs, stack, args.web_workers) for name in HOSTS}
        for host in hosts.values():  # gunicorn is waited for until it answers: the web hosts' last
            host.start_beat()
            if host.name.startswith("work"):
                host.start_workers()
        for host in hosts.values():
            if host.name.startswith("web"):
                host.start_web()
        stack.callback(lambda: [host.stop() for host in hosts.values()])  # unwound first: every stop at once
        wait_until(lambda: all(host.ready() for host in hosts.values()), timeout=120, what="every host's processes")
        first = leader()
        report["set up in"] = round(time.monotonic() - started, 1)
        print(f"hosts up after {report['set up in']} s; the lease is {first.holder}'s", file=sys.stderr, flush=True)

        bases = [hosts["web1"].base, hosts["web2"].base]
        load = Load(
            bases,
            secret_key=project["secretKey"],
            public_key=project["publicKey"],
            sender="hi@bench.test",
            sends=args.sends,
            tracks=args.tracks,
            seconds=args.seconds,
        )
        with load:
            after = max(args.seconds / 3, 3)
            campaign_id, scheduled_for = schedule_campaign(bases[0], project["secretKey"], after=after)
            # The loss comes while the campaign is being delivered (or at the end of the load, if it never was).
            deadline = load.started + args.seconds
            while not delivering(campaign_id) and time.monotonic() < deadline:
                time.sleep(0.05)
            report["campaign delivering at the loss"] = delivering(campaign_id)
            report["loss after"] = round(time.monotonic() - load.started, 1)
            lost = lose(hosts, report)
            load.finish()
        loaded = time.monotonic()
        print(f"load done after {loaded - load.started:.0f} s; waiting for the service", file=sys.stderr, flush=True)
        # Not before the tasks the lost host held were handed out again (bench/multihost_settings.py) and done.
        handed_out = lost["at"] + 13
        deadline = time.monotonic() + args.settle
        while time.monotonic() < deadline and not (settled(campaign_id) and time.monotonic() > handed_out):
            time.sleep(0.5)
        report["settled after the load"] = round(time.monotonic() - loaded, 1)
        time.sleep(3)  # a duplicate delivery task would have sent by now
        report.update(books(load, sink, campaign_id, scheduled_for, args.contacts, hosts, lost))
        report["load seconds"] = round(loaded - load.started, 1)
    report["whole run"] = round(time.monotonic() - started, 1)
    return report


def lose(hosts: dict, report: dict) -> dict:
    """SIGKILL the host LOST and the beat that holds the lease; how long until another beat took the lease."""
    before = leader()
    leading = next(host for host in hosts.values() if host.beat.pid == int(before.pid))
    lost_at = time.monotonic()
    delivery_pool = hosts[LOST].lose()
    if leading.name != LOST:
        os.kill(leading.beat.pid, signal.SIGKILL)
        leading.beat.wait()
    killed_at = before.now  # the database's clock, as the lease's times
    after = wait_until(
        lambda: (lease := leader()) is not None and lease.holder != before.holder and lease,
        timeout=LEASE + RETRY + 30,
        what="another beat to take the lease",
    )
    takeover = (after.acquired_at - killed_at).total_seconds()
    new = next(host.name for host in hosts.values() if host.beat.pid == int(after.pid))
    report["lost"] = {
        "host": LOST,
        "leader beat killed": leading.name,
        "delivery pool processes": delivery_pool,
        "new leader": new,
        "takeover after": round(takeover, 2),
        "lease left at the kill": round((before.expires_at - killed_at).total_seconds(), 2),
    }
    print(f"lost {LOST} and the beat of {leading.name}; {new} took the lease after {takeover:.2f} s", file=sys.stderr)
    return {**report["lost"], "takeover after": takeover, "at": lost_at}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=3000, help="/v1/send calls, spread over --seconds")
    parser.add_argument("--tracks", type=int, default=3000, help="/v1/track calls, spread over --seconds")
    parser.add_argument("--contacts", type=int, default=10000, help="contacts the campaign goes to")
    parser.add_argument("--seconds", type=float, default=60, help="how long the load lasts; the kill is half-way")
    parser.add_argument("--settle", type=float, default=300, help="at most this long for the service to catch up")
    parser.add_argument("--redis-port", type=int, default=56380, help="the drill's redis-server, on the bridge")
    parser.add_argument("--pg-port", type=int, default=5432, help="the PostgreSQL forwarder's port, on the bridge")
    parser.add_argument(
        "--schema-from",
        help="a migrated PostgreSQL database (URL) whose schema the drill's copies, in place of migrate",
    )
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers on each web host")
    parser.add_argument("--logs", help="a folder to keep the processes' logs in (else they are removed)")
    args = parser.parse_args()
    # Stopped (a CI job's timeout), the drill still removes its namespaces and processes on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    # The report alone on stdout: what the processes print there (Celery's banner) goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    with tempfile.TemporaryDirectory(prefix="multihost-") as logs:
        report = drill(args, Path(args.logs or logs))
    report["machine"] = machine()
    print(json.dumps(report, indent=2, default=str), file=out, flush=True)
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
