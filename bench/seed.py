"""Seeds a project with contacts, events and emails shaped like a Herald project's, at any size, with PostgreSQL COPY.

    python bench/seed.py --database herald_bench_seed --fresh --contacts 1000000 --events 10000000 --emails 2000000
    python bench/seed.py --database herald_bench_seed --project <id> ...     # into an existing project

Prints JSON: rows, seconds and rows/s per table, and each table's size on disk. `--seed` makes the rows the same from
run to run (their times are relative to the run's start). From code: `seed(project=..., contacts=..., ...)` after
`django.setup()`, on the database Django is configured with (the project must be committed: the rows are written
on connections of their own).

The shapes (docs/performance.md, "Seeding"):
- contacts over the last two years, signing up faster as the audience grows; about 90 % subscribed; `data` with a
  name, plan, country, age, lifetime value, lead score (0-999, uniform), newsletter flag and company, some keys
  missing, of four JSON types.
  Contact `i` is a pure function of the seed and `i`, so events and emails find a contact without a lookup.
- emails over the last year: 60 % marketing, from a campaign a week to the subscribed audience of the day, the
  rest transactional to a skewed few; about 0.5 % failed, 1.5 % hard bounces, 98 % of the rest delivered, a
  quarter (marketing) or nearly half (transactional) opened, some clicked, a few complaints. Bodies only on the
  last `EMAIL_BODY_RETENTION_DAYS` days, as the retention run leaves them. Campaigns and their stored content,
  the monthly usage counters and the hourly email stats are written from the email rows, as Herald keeps them.
- events over the last year, in time order with UUIDv7 ids of their time, as Herald records them: every email's
  `email.*` events (sent, delivery, each open and click, bounce, complaint, failed) with the payload delivery and
  tracking give them, plus tracked events to make up the total: a few dozen names of Zipf-like frequencies, some
  with data, from contacts whose activity is skewed (a tenth of them record about half of the events).
Emails and events are generated together in time order and written on two connections at once.
"""

import argparse
import hashlib
import heapq
import itertools
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

DAY = 86400.0
CONTACT_DAYS = 730
ACTIVITY_DAYS = 365
CAMPAIGN_EVERY_DAYS = 7
MARKETING_SHARE = 0.6
# Per email: failed before sending; of the sent, hard-bounced; of the rest, delivered; of the delivered, opened
# (marketing, transactional); of the opened, clicked; of the delivered marketing, complained.
FAILED, BOUNCED, DELIVERED = 0.005, 0.015, 0.98
OPENED = {"MARKETING": 0.25, "TRANSACTIONAL": 0.45}
CLICKED = {"MARKETING": 0.15, "TRANSACTIONAL": 0.25}
COMPLAINED = 0.0005
# Extra opens and clicks after the first: geometric with this chance of one more.
MORE_OPENS, MORE_CLICKS = 0.4, 0.2
BATCH = 2000
CHUNK = 200_000

FIRST_NAMES = (  # noqa: SIM905 - a list of words reads best as text
    "anna emma mia sofia lea laura julia sarah lisa marie nina clara eva lena hannah paul lukas leon jonas finn "
    "elias noah ben felix max david tom jan luca tim liam oliver james lucas hugo louis arthur jules"
).split()
LAST_NAMES = (  # noqa: SIM905 - a list of words reads best as text
    "smith jones brown miller davis garcia wilson martin moore taylor thomas white harris clark lewis young "
    "schmidt muller schneider fischer weber meyer wagner becker schulz hoffmann dubois durand bernard petit rossi "
    "russo ferrari bianchi romano novak kowalski nowak jansen devries visser"
).split()
DOMAINS = (("gmail.com", 40), ("outlook.com", 12), ("yahoo.com", 10), ("icloud.com", 8), ("gmx.de", 6),
           ("hotmail.com", 6), ("proton.me", 3), ("acme.io", 5), ("example.org", 5), ("web.de", 5))  # fmt: skip
PLANS = (("free", 60), ("starter", 22), ("pro", 13), ("enterprise", 5))
COUNTRIES = (("US", 30), ("DE", 15), ("GB", 12), ("FR", 10), ("ES", 6), ("IT", 6), ("NL", 5), ("BR", 5),
             ("IN", 5), ("CA", 4), ("PL", 2))  # fmt: skip
COMPANIES = (  # noqa: SIM905 - a list of words reads best as text
    "Acme Globex Initech Umbrella Hooli Stark Wayne Wonka Tyrell Cyberdyne Soylent Vandelay"
).split()
# Tracked events, most frequent first; their weights are 1/rank (Zipf). The data of some is shaped below.
EVENT_NAMES = (  # noqa: SIM905 - a list of words reads best as text
    "page.view session.start login product.view search cart.add checkout.start purchase signup feature.used "
    "file.upload invite.sent comment.created report.exported settings.changed password.reset plan.upgraded "
    "trial.started subscription.renewed api.key.created integration.connected webinar.registered ticket.opened "
    "review.submitted referral.sent plan.downgraded trial.expired account.deleted"
).split()
PATHS = ("/", "/pricing", "/docs", "/blog", "/features", "/about", "/changelog", "/docs/api", "/login", "/signup")
SKUS = ("SKU-1001", "SKU-1002", "SKU-2040", "SKU-3300", "SKU-7000")
TRANSACTIONAL_SUBJECTS = ("Your receipt", "Reset your password", "Welcome aboard", "Your order has shipped",
                          "Confirm your email", "Your invoice is ready", "New sign-in to your account")  # fmt: skip
CAMPAIGN_TOPICS = ("Spring sale", "Product update", "New features", "Monthly digest", "Webinar invitation",
                   "Customer stories", "Black Friday", "Year in review", "Tips and tricks", "Summer offer")  # fmt: skip
PARAGRAPH = (
    '<p style="font-family:Arial,sans-serif;font-size:15px;line-height:1.5;color:#333">{topic}: lorem ipsum dolor '
    "sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>"
)
CONTACT_COLUMNS = "id, project_id, email, subscribed, data, created_at, updated_at"
EVENT_COLUMNS = "id, project_id, contact_id, name, email_id, data, created_at"
EMAIL_COLUMNS = (
    "id, project_id, contact_id, to_email, to_name, campaign_id, source, type, from_email, from_name, reply_to, "
    "subject, html, rendered, headers, message_id, provider_message_id, status, attempts, last_error, sent_at, "
    "delivered_at, opened_at, clicked_at, bounced_at, complained_at, opens, clicks, created_at, updated_at"
)
TABLES = ("contacts_contact", "contacts_event", "messaging_email")


def picks(pairs) -> list:
    """A table to pick from with one random index: each value as often as its (whole) weight says."""
    return [value for value, weight in pairs for _ in range(weight)]


@lru_cache(maxsize=1024)
def _day(day: int) -> str:
    return datetime.fromtimestamp(day * DAY, UTC).strftime("%Y-%m-%d")


def stamp(moment: float) -> str:
    """A COPY timestamp of a POSIX time, the date cached (formatting a datetime was a sixth of the generation's
    time)."""
    day, micros = divmod(int(moment * 1e6), 86_400_000_000)
    hour, micros = divmod(micros, 3_600_000_000)
    minute, micros = divmod(micros, 60_000_000)
    second, micros = divmod(micros, 1_000_000)
    return f"{_day(day)} {hour:02d}:{minute:02d}:{second:02d}.{micros:06d}+00"


def uuid7(moment: float, rng: random.Random) -> str:
    """A version 7 UUID of `moment` (milliseconds), as `uuid6.uuid7` and `contacts.services._PG_UUID7` make them."""
    rand = rng.getrandbits(74)
    value = int(moment * 1000) << 80 | 7 << 76 | (rand >> 62) << 64 | 2 << 62 | (rand & (1 << 62) - 1)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def uuid4(rng: random.Random) -> str:
    value = rng.getrandbits(128) & ~(0xF << 76 | 0x3 << 62) | 4 << 76 | 2 << 62
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


class Contact(NamedTuple):
    id: str
    email: str
    first: str
    last: str
    subscribed: bool
    created: float

    @property
    def name(self) -> str:
        return f"{self.first.title()} {self.last.title()}"


@dataclass
class Shape:
    """The sizes and times of one seeding, and contact `i` as a function of them. What the rows hold depends on the
    seed alone; their ids on the project too, so that two projects of one database can be seeded alike."""

    contacts: int
    events: int
    emails: int
    seed: int
    project_id: str
    now: float
    body_days: int
    # The history of emails and events: they lie in the `days` days before `now`.
    days: int = ACTIVITY_DAYS
    domain: str = "bench.test"
    key: bytes = field(init=False)
    id_key: bytes = field(init=False)

    def __post_init__(self):
        self.key = hashlib.blake2b(str(self.seed).encode(), digest_size=16).digest()
        self.id_key = hashlib.blake2b(f"{self.seed} {self.project_id}".encode(), digest_size=16).digest()
        self.contact = lru_cache(maxsize=1 << 16)(self._contact)
        self.start = self.now - CONTACT_DAYS * DAY

    def contact_time(self, i: int) -> float:
        # Signups accelerate: the audience grows with the square of time.
        return self.start + CONTACT_DAYS * DAY * math.sqrt((i + 0.5) / self.contacts)

    def contacts_at(self, moment: float) -> int:
        """How many contacts exist at `moment`: contacts 0 to n - 1."""
        share = max(0.0, (moment - self.start) / (CONTACT_DAYS * DAY))
        return min(self.contacts, int(self.contacts * share * share + 0.5))

    def _contact(self, i: int) -> Contact:
        number = i.to_bytes(8, "little")
        digest = hashlib.blake2b(number, key=self.key, digest_size=8).digest()
        random_id = hashlib.blake2b(number, key=self.id_key, digest_size=16).digest()
        text = random_id.hex()  # version 4, RFC 4122 variant: the 13th digit and 2 bits of the 17th are set
        first, last = FIRST_NAMES[digest[0] % len(FIRST_NAMES)], LAST_NAMES[digest[1] % len(LAST_NAMES)]
        return Contact(
            f"{text[:8]}-{text[8:12]}-4{text[13:16]}-{'89ab'[random_id[8] & 3]}{text[17:20]}-{text[20:]}",
            f"{first}.{last}{i}@{DOMAIN_PICKS[digest[2] % len(DOMAIN_PICKS)]}",
            first,
            last,
            digest[3] < 230,
            self.contact_time(i),
        )


DOMAIN_PICKS, PLAN_PICKS, COUNTRY_PICKS = picks(DOMAINS), picks(PLANS), picks(COUNTRIES)


def contact_rows(shape: Shape) -> Iterator[str]:
    rng, project_id = random.Random(shape.seed), shape.project_id
    for i in range(shape.contacts):
        contact = shape._contact(i)
        data = [
            f'"firstName": "{contact.first.title()}", "lastName": "{contact.last.title()}", '
            f'"plan": "{PLAN_PICKS[int(rng.random() * len(PLAN_PICKS))]}", '
            f'"country": "{COUNTRY_PICKS[int(rng.random() * len(COUNTRY_PICKS))]}"'
        ]
        if rng.random() < 0.8:
            # The younger more often: the smaller of two uniform draws.
            data.append(f'"age": {18 + int(60 * min(rng.random(), rng.random()))}')
        if rng.random() < 0.5:
            data.append(f'"ltv": {round(rng.lognormvariate(4, 1.2), 2)}')
        data.append(f'"score": {rng.randrange(1000)}')
        data.append(f'"newsletter": {"true" if rng.random() < 0.7 else "false"}')
        if rng.random() < 0.4:
            data.append(f'"company": "{COMPANIES[rng.randrange(len(COMPANIES))]}"')
        created = contact.created
        updated = created + (shape.now - created) * rng.random() if rng.random() < 0.3 else created
        yield (
            f"{contact.id}\t{project_id}\t{contact.email}\t{'t' if contact.subscribed else 'f'}\t"
            f"{{{', '.join(data)}}}\t{stamp(created)}\t{stamp(updated)}\n"
        )


class Activity:
    """Emails and events in time order: `rows()` yields ("email" | "event", COPY line)."""

    def __init__(self, shape: Shape):
        self.shape, self.project_id = shape, shape.project_id
        self.rng = random.Random(shape.seed + 1)
        self.ids = random.Random(f"{shape.seed} {shape.project_id}")  # ids of the project's own
        # Ends two minutes ago: every send, delivery, bounce and failure (at most a minute after its email) is past.
        self.start = shape.now - 120 - shape.days * DAY
        self.body_since = shape.now - shape.body_days * DAY
        self.sequence = itertools.count()
        # The email.* events still ahead: (time, sequence, name, (email id, contact id, payload), the kind's fields).
        self.pending: list = []
        self.campaigns: list[dict] = []
        self.email_events = 0
        self.last_hit: float | None = None  # the latest open or click of the email being written
        self.marketing = round(shape.emails * MARKETING_SHARE) if shape.contacts else 0
        self.transactional = shape.emails - self.marketing if shape.contacts else 0
        self.event_picks = picks((name, round(1000 / rank)) for rank, name in enumerate(EVENT_NAMES, start=1))

    # Contacts: a skewed pick among those who exist at `moment` (a multiplicative permutation spreads the active
    # ones over all signup dates).
    def active_contact(self, moment: float) -> Contact | None:
        existing = self.shape.contacts_at(moment)
        if not existing:
            return None
        rank = int(self.shape.contacts * self.rng.random() ** 3)
        return self.shape.contact((rank * 2654435761 + self.shape.seed) % self.shape.contacts % existing)

    def day_counts(self, total: int) -> Iterator[tuple[float, int]]:
        """(day start, rows of the day) for the activity period: `total` spread in proportion to the audience."""
        days = [self.start + d * DAY for d in range(self.shape.days)]
        weights = [self.shape.contacts_at(day + DAY / 2) + 1 for day in days]
        scale, carried, done = total / sum(weights), 0.0, 0
        for day, weight in zip(days, weights, strict=True):
            carried += weight * scale
            count = min(total - done, round(carried) - done)
            done += count
            yield day, count

    def times(self, total: int) -> Iterator[float]:
        for day, count in self.day_counts(total):
            yield from sorted(day + DAY * self.rng.random() for _ in range(count))

    # Emails: each yields (created, row) in time order; transactional ones spread, a campaign's in one burst.
    def transactional_emails(self) -> Iterator[tuple[float, dict]]:
        for moment in self.times(self.transactional):
            contact = self.active_contact(moment)
            if contact is None:  # nobody has signed up yet
                continue
            subject = TRANSACTIONAL_SUBJECTS[int(len(TRANSACTIONAL_SUBJECTS) * self.rng.random() ** 2)]
            yield moment, {"contact": contact, "type": "TRANSACTIONAL", "source": "api", "subject": subject}

    def campaign_plan(self) -> list[dict]:
        sends = [self.start + (week + 0.4) * CAMPAIGN_EVERY_DAYS * DAY for week in range(self.shape.days // 7)]
        audiences = [self.shape.contacts_at(moment) for moment in sends]
        total = sum(audiences) * 0.9 or 1
        plan = []
        for number, (moment, audience) in enumerate(zip(sends, audiences, strict=True)):
            size = self.marketing * audience * 0.9 / total
            if size < 1:
                continue
            topic = CAMPAIGN_TOPICS[number % len(CAMPAIGN_TOPICS)]
            plan.append(
                {
                    "id": uuid4(self.ids),
                    "name": f"{topic} #{number + 1}",
                    "subject": f"{topic}: what is new this week",
                    "sent_at": moment,
                    "audience": audience,
                    # Every stride-th subscribed contact, so that the sizes add up to the marketing share.
                    "stride": max(1.0, audience * 0.9 / size),
                }
            )
        self.campaigns = plan
        return plan

    def campaign_emails(self, campaign: dict) -> Iterator[tuple[float, dict]]:
        # The fan-out inserts a few thousand rows a second, from the oldest contact on.
        moment, position = campaign["sent_at"], self.rng.random() * campaign["stride"]
        while position < campaign["audience"]:
            contact = self.shape.contact(int(position))
            position += campaign["stride"]
            if contact.subscribed:
                moment += 0.0004
                yield moment, {"contact": contact, "type": "MARKETING", "source": "campaign", "campaign": campaign}

    def emails(self) -> Iterator[tuple[float, dict]]:
        campaigns = [self.campaign_emails(campaign) for campaign in self.campaign_plan()]
        merged = heapq.merge(self.transactional_emails(), *campaigns, key=lambda item: item[0])
        return itertools.islice(merged, self.shape.emails)

    def expected_email_events(self) -> float:
        """Events per email on average, from the shares above (to leave the rest of the total to tracked events)."""
        per_email = 0.0
        for kind, share in (("MARKETING", MARKETING_SHARE), ("TRANSACTIONAL", 1 - MARKETING_SHARE)):
            sent = 1 - FAILED
            delivered = sent * (1 - BOUNCED) * DELIVERED
            opened = delivered * OPENED[kind]
            clicked = opened * CLICKED[kind]
            per_email += share * (
                FAILED + sent + sent * BOUNCED + delivered + opened / (1 - MORE_OPENS) + clicked / (1 - MORE_CLICKS)
            )
        return per_email

    def email_row(self, created: float, email: dict) -> str:
        """The email's COPY line; its events are queued in `pending` at their times."""
        rng, now, contact = self.rng, self.shape.now, email["contact"]
        self.last_hit = None
        email_id = uuid4(self.ids)
        domain = self.shape.domain
        campaign = email.get("campaign")
        subject = campaign["subject"] if campaign else email["subject"]
        message_id = f"<{email_id}@{domain}>"
        base = (
            f'"emailId": "{email_id}", "messageId": "{message_id}", "subject": "{subject}", '
            f'"from": "hello@{domain}", "templateId": null, '
            f'"campaignId": {json.dumps(campaign["id"]) if campaign else "null"}, "workflowId": null, '
            f'"source": "{email["source"]}"'
        )
        info = (email_id, contact.id, base)
        at = {"sent": None, "delivered": None, "opened": None, "clicked": None, "bounced": None, "complained": None}
        opens = clicks = 0
        status, error, updated = "SENT", "", created
        if rng.random() < FAILED:
            status, error, updated = "FAILED", "SMTP 554: 5.7.1 Message rejected", created + 60
            self.queue(updated, "email.failed", info, f', "error": "{error}"')
        else:
            at["sent"] = created + 1 + rng.random() * 20
            self.queue(at["sent"], "email.sent", info, f', "sentAt": "{iso(at["sent"])}"')
            if rng.random() < BOUNCED:
                status, at["bounced"] = "BOUNCED", at["sent"] + 2 + rng.random() * 30
                self.queue(
                    at["bounced"], "email.bounce", info, f', "bounceType": "hard", "bouncedAt": "{iso(at["bounced"])}"'
                )
            elif rng.random() < DELIVERED:
                status, at["delivered"] = "DELIVERED", at["sent"] + 1 + rng.random() * 10
                self.queue(at["delivered"], "email.delivery", info, f', "deliveredAt": "{iso(at["delivered"])}"')
                opens, clicks = self.engagement(email["type"], at, info)
                if opens:
                    status = "CLICKED" if clicks else "OPENED"
                if email["type"] == "MARKETING" and rng.random() < COMPLAINED:
                    at["complained"] = at["delivered"] + rng.expovariate(1 / 7200)
                    if at["complained"] < now:
                        status = "COMPLAINED"
                        self.queue(
                            at["complained"], "email.complaint", info, f', "complainedAt": "{iso(at["complained"])}"'
                        )
                    else:
                        at["complained"] = None
            updated = max(moment for moment in (*at.values(), self.last_hit) if moment)
        body = self.body(subject, contact) if created >= self.body_since else ""
        return (
            f"{email_id}\t{self.project_id}\t{contact.id}\t{contact.email}\t{contact.name}\t"
            f"{campaign['id'] if campaign else NULL}\t{email['source']}\t{email['type']}\thello@{domain}\t"
            f"Herald Bench\t\t{subject}\t{body}\tt\t{{}}\t{message_id}\t\t{status}\t1\t{error}\t"
            + "\t".join(stamp(value) if value else NULL for value in at.values())
            + f"\t{opens}\t{clicks}\t{stamp(created)}\t{stamp(updated)}\n"
        )

    def engagement(self, kind: str, at: dict, info: tuple) -> tuple[int, int]:
        """Opens and clicks of a delivered email (none after now), queued as events; sets the first of each."""
        rng, now = self.rng, self.shape.now
        if rng.random() >= OPENED[kind]:
            return 0, 0
        moment, opens = at["delivered"] + min(rng.expovariate(1 / 10800), 3 * DAY), 0
        while moment < now:
            opens += 1
            self.queue(
                moment,
                "email.open",
                info,
                f', "openedAt": "{iso(moment)}", "opens": {opens}, "isFirstOpen": {"true" if opens == 1 else "false"}',
            )
            at["opened"] = at["opened"] or moment
            self.last_hit = moment
            if rng.random() >= MORE_OPENS:
                break
            moment += rng.expovariate(1 / 3600)
        if not opens or rng.random() >= CLICKED[kind]:
            return opens, 0
        moment, clicks = at["opened"] + rng.expovariate(1 / 60), 0
        while moment < now:
            clicks += 1
            self.queue(
                moment,
                "email.click",
                info,
                f', "link": "https://{self.shape.domain}/offer", "clickedAt": "{iso(moment)}", "clicks": {clicks}, '
                f'"isFirstClick": {"true" if clicks == 1 else "false"}',
            )
            at["clicked"] = at["clicked"] or moment
            self.last_hit = max(self.last_hit, moment)
            if rng.random() >= MORE_CLICKS:
                break
            moment += rng.expovariate(1 / 120)
        return opens, clicks

    def body(self, subject: str, contact: Contact) -> str:
        paragraphs = PARAGRAPH.format(topic=subject) * (4 + self.rng.randrange(12))
        return (
            f"<html><body><h1>Hello {contact.name}</h1>{paragraphs}"
            f'<p><a href="https://{self.shape.domain}/offer">See more</a></p></body></html>'
        )

    def queue(self, moment: float, name: str, info: tuple, extra: str) -> None:
        heapq.heappush(self.pending, (moment, next(self.sequence), name, info, extra))

    def tracked_event(self, moment: float) -> str | None:
        contact = self.active_contact(moment)
        if contact is None:
            return None
        rng = self.rng
        name = self.event_picks[int(rng.random() * len(self.event_picks))]
        if name == "page.view":
            data = f'{{"path": "{PATHS[int(len(PATHS) * rng.random() ** 2)]}"}}'
        elif name == "purchase":
            amount = round(rng.lognormvariate(3.5, 0.8), 2)
            data = f'{{"amount": {amount}, "currency": "EUR", "sku": "{SKUS[rng.randrange(len(SKUS))]}"}}'
        elif name == "search":
            data = f'{{"query": "{LAST_NAMES[rng.randrange(len(LAST_NAMES))]}", "results": {rng.randrange(50)}}}'
        elif name == "plan.upgraded":
            data = '{"from": "starter", "to": "pro"}'
        else:
            data = "{}"
        return f"{uuid7(moment, self.ids)}\t{self.project_id}\t{contact.id}\t{name}\t{NULL}\t{data}\t{stamp(moment)}\n"

    def email_event(self, item: tuple) -> str:
        moment, _sequence, name, (email_id, contact_id, base), extra = item
        self.email_events += 1
        return (
            f"{uuid7(moment, self.ids)}\t{self.project_id}\t{contact_id}\t{name}\t{email_id}\t{{{base}{extra}}}\t"
            f"{stamp(moment)}\n"
        )

    def rows(self) -> Iterator[tuple[str, str]]:
        shape = self.shape
        tracked_total = max(0, shape.events - round(shape.emails * self.expected_email_events()))
        tracked = self.times(tracked_total if shape.contacts else 0)
        next_tracked = next(tracked, math.inf)
        pending = self.pending

        def events_until(moment: float) -> Iterator[tuple[str, str]]:
            nonlocal next_tracked
            while True:
                first_email_event = pending[0][0] if pending else math.inf
                if min(first_email_event, next_tracked) > moment or (not pending and next_tracked == math.inf):
                    return
                if first_email_event <= next_tracked:
                    yield "event", self.email_event(heapq.heappop(pending))
                else:
                    line = self.tracked_event(next_tracked)
                    if line:
                        yield "event", line
                    next_tracked = next(tracked, math.inf)

        for created, email in self.emails():
            yield from events_until(created)
            yield "email", self.email_row(created, email)
        yield from events_until(math.inf)


NULL = "\\N"


def iso(moment: float) -> str:
    """`core.time.iso` of a POSIX time: the payloads' timestamp format."""
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


class Writer:
    """COPY on a connection of its own, fed lines in batches, committed every `CHUNK` rows: PostgreSQL queues a
    foreign-key check per row until the end of the statement, so one COPY of 100 million rows would hold 200
    million of them in memory; a chunk holds a bounded number, and a failure loses one chunk."""

    def __init__(self, table: str, columns: str):
        import psycopg
        from django.db import connection

        self.sql, self.table, self.rows, self.batch = f"COPY {table} ({columns}) FROM STDIN", table, 0, []
        params = connection.get_connection_params()
        for django_only in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(django_only, None)
        self.connection = psycopg.connect(**params)
        self.copy_context = self.copy = None

    def write(self, line: str) -> None:
        self.batch.append(line)
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        if self.copy is None:
            self.copy_context = self.connection.cursor().copy(self.sql)
            self.copy = self.copy_context.__enter__()
        self.copy.write("".join(self.batch))
        self.rows += len(self.batch)
        self.batch = []
        if self.rows % CHUNK < BATCH:
            self.commit()

    def commit(self) -> None:
        if self.copy is not None:
            self.copy_context.__exit__(None, None, None)
            self.connection.commit()
            self.copy_context = self.copy = None

    def close(self) -> None:
        self.flush()
        self.commit()
        self.connection.close()


def seed(
    *,
    project,
    contacts: int,
    events: int,
    emails: int,
    seed: int = 1,
    days: int = ACTIVITY_DAYS,
    analyze: bool = True,
    log=None,
) -> dict:
    """Write the rows into `project` (committed, on PostgreSQL) and what Herald derives from them; returns the
    figures printed by the command. The tables keep their indexes while loading: dropping them and building them
    afterwards was slower (docs/performance.md, "Seeding") and leaves them denser than a live table's."""
    from django.conf import settings

    shape = Shape(
        contacts=contacts,
        events=events,
        emails=emails,
        seed=seed,
        project_id=str(project.id),
        now=time.time(),
        body_days=settings.EMAIL_BODY_RETENTION_DAYS,
        days=days,
    )
    figures: dict = {"seed": seed, "tables": {}}
    begun = time.perf_counter()
    say = log or (lambda message: None)
    figures["partitions_made"] = months_of_history(since=shape.now - days * DAY - DAY)
    activity = _load(shape, figures, say)
    started = time.perf_counter()
    derived_write(project=project, campaigns=activity.campaigns, shape=shape)
    figures["derived_seconds"] = round(time.perf_counter() - started, 1)
    if analyze:
        started = time.perf_counter()
        from django.db import connection

        with connection.cursor() as cursor:
            for table in (*TABLES, "messaging_emailstatshour", "campaigns_campaign"):
                cursor.execute(f"VACUUM ANALYZE {table}")
        figures["analyze_seconds"] = round(time.perf_counter() - started, 1)
    figures["seconds"] = round(time.perf_counter() - begun, 1)
    figures["sizes"] = table_sizes()
    return figures


def months_of_history(*, since: float) -> list[str]:
    """The partitioned tables as an install that has run since `since` has them, one partition per month (made by
    the daily `ensure-partitions`), instead of the one partition a fresh database's conversion makes of everything
    before next month, which would hold the whole history; returns the partitions made. That partition must be
    empty (a database of its own, `--fresh`): it is dropped."""
    from django.db import connection

    from core.partitions import AHEAD_MONTHS, month_start, partition_drop, partitions, partitions_ensure

    first = datetime.fromtimestamp(since, UTC)
    now = datetime.now(UTC)
    made = []
    for table in TABLES:
        catch_all = [p for p in partitions(table) if p.lower is None and p.upper > first]
        for partition in catch_all:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT EXISTS (SELECT FROM {partition.name})")
                if cursor.fetchone()[0]:
                    raise SystemExit(f"{partition.name} holds rows: seed into a database of its own (--fresh)")
            partition_drop(partition)
        if catch_all:
            months = (now.year - first.year) * 12 + now.month - first.month
            made += partitions_ensure(table=table, now=month_start(first), ahead=months + AHEAD_MONTHS)
    return made


def _load(shape: Shape, figures: dict, say) -> "Activity":
    started = time.perf_counter()
    writer = Writer("contacts_contact", CONTACT_COLUMNS)
    for line in contact_rows(shape):
        writer.write(line)
    writer.close()
    figures["tables"]["contacts_contact"] = _rate(writer.rows, started)
    say(f"contacts: {figures['tables']['contacts_contact']}")

    started = time.perf_counter()
    activity = Activity(shape)
    writers = {
        "email": Writer("messaging_email", EMAIL_COLUMNS),
        "event": Writer("contacts_event", EVENT_COLUMNS),
    }
    for kind, line in activity.rows():
        writers[kind].write(line)
    for writer in writers.values():
        writer.close()
    seconds = time.perf_counter() - started
    figures["emails_and_events_seconds"] = round(seconds, 1)
    for writer in writers.values():
        figures["tables"][writer.table] = {"rows": writer.rows, **_rate(writer.rows, started, seconds)}
    figures["email_events"] = activity.email_events
    say(f"emails and events: {figures['tables']}")
    return activity


def _rate(rows: int, started: float, seconds: float | None = None) -> dict:
    seconds = seconds if seconds is not None else time.perf_counter() - started
    return {"rows": rows, "seconds": round(seconds, 1), "rows_per_second": round(rows / seconds) if seconds else None}


CAMPAIGN_COUNTS = """
UPDATE campaigns_campaign AS campaign SET
    total_recipients = counted.total, sent_count = counted.sent, delivered_count = counted.delivered,
    opened_count = counted.opened, clicked_count = counted.clicked, bounced_count = counted.bounced,
    complained_count = counted.complained
FROM (
    SELECT campaign_id, count(*) AS total, count(sent_at) AS sent, count(delivered_at) AS delivered,
           count(opened_at) AS opened, count(clicked_at) AS clicked, count(bounced_at) AS bounced,
           count(complained_at) AS complained
    FROM messaging_email WHERE project_id = %s AND campaign_id IS NOT NULL GROUP BY campaign_id
) AS counted
WHERE campaign.id = counted.campaign_id
"""
# Emails created per category and month, as the send path counts them (one shard).
USAGE_COUNTS = """
INSERT INTO billing_usagecounter (project_id, category, month, shard, count)
SELECT project_id, CASE source WHEN 'campaign' THEN 'campaigns' WHEN 'workflow' THEN 'workflows'
                                ELSE 'transactional' END,
       date_trunc('month', created_at AT TIME ZONE 'UTC')::date, 0, count(*)
FROM messaging_email WHERE project_id = %s GROUP BY 1, 2, 3
ON CONFLICT (project_id, category, month, shard) DO UPDATE SET count = billing_usagecounter.count + EXCLUDED.count
"""


def derived_write(*, project, campaigns: list[dict], shape: Shape) -> None:
    """What Herald keeps beside the rows: the campaigns with their stored content and counters, the monthly usage
    counters and the hourly email stats (rebuilt from the email rows by the rollup's own service)."""
    from django.db import connection, transaction

    from campaigns.models import Campaign, CampaignStatus
    from messaging.insights.rollup import email_stats_rebuild
    from messaging.models import DeferredContent

    body = PARAGRAPH.format(topic="{{ contact.firstName }}") * 6
    with transaction.atomic():
        for plan in campaigns:
            sent_at = datetime.fromtimestamp(plan["sent_at"], UTC)
            fields = {"project": project, "subject": plan["subject"], "body": body}
            Campaign.objects.create(
                id=plan["id"],
                name=plan["name"],
                from_email=f"hello@{shape.domain}",
                from_name="Herald Bench",
                status=CampaignStatus.SENT,
                sent_at=sent_at,
                created_at=sent_at,
                updated_at=sent_at,
                **fields,
            )
            DeferredContent.objects.create(id=plan["id"], updated_at=sent_at, **fields)
        with connection.cursor() as cursor:
            cursor.execute(CAMPAIGN_COUNTS, [project.id])
            cursor.execute(USAGE_COUNTS, [project.id])
    end = datetime.fromtimestamp(shape.now + 4 * DAY, UTC)
    email_stats_rebuild(start=datetime.fromtimestamp(shape.start, UTC), end=end, project_id=project.id)


def table_sizes() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            # A partitioned table's size is its partitions' (pg_partition_tree has no row for a plain table).
            "SELECT relname, sum(pg_table_size(part)), sum(pg_indexes_size(part)) FROM pg_class "
            "LEFT JOIN LATERAL pg_partition_tree(pg_class.oid) AS tree ON true, coalesce(tree.relid, pg_class.oid) part "
            "WHERE relname = ANY(%s) GROUP BY relname",
            [list(TABLES)],
        )
        return {
            name: {"table_mb": round(table / 2**20), "indexes_mb": round(indexes / 2**20)}
            for name, table, indexes in cursor.fetchall()
        }


def bench_project(*, name: str = "Bench", domain: str = "bench.test"):
    """A project made as `create_project --verified-domain` makes it, with its keys."""
    from accounts.identity.users import user_get_or_create
    from accounts.tenancy.services import project_create
    from domains.services import domain_mark_verified_by_operator

    owner, _ = user_get_or_create(email=f"bench@{domain}", password=None)
    project, keys = project_create(name=name, owner=owner)
    domain_mark_verified_by_operator(project=project, name=domain)
    return project, keys


def seed_command(
    database: str,
    *,
    contacts: int,
    events: int,
    emails: int,
    project: str | None = None,
    fresh: bool = False,
    seed: int = 1,
) -> dict:
    """Run this command in a process of its own (a benchmark's parent process keeps no Django set-up) and return
    its figures."""
    from bench.serve import PYTHON, ROOT

    sizes = ["--contacts", str(contacts), "--events", str(events), "--emails", str(emails), "--seed", str(seed)]
    command = [PYTHON, "bench/seed.py", "--database", database, *sizes, *(["--project", project] if project else [])]
    done = subprocess.run(
        [*command, *(["--fresh"] if fresh else [])], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--emails", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--days", type=int, default=ACTIVITY_DAYS, help="of history: the emails and events lie in the last DAYS days"
    )
    parser.add_argument("--database", default="herald_bench_seed")
    parser.add_argument("--fresh", action="store_true", help="drop and create the database and migrate it first")
    parser.add_argument("--project", help="the id of an existing project (default: create one)")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.serve import bench_env, fresh_database, manage

    # Seeding publishes no task and shares no cache with a running service: Redis stays out of it.
    env = bench_env(args.database, CACHE_URL="locmemcache://seed", CELERY_BROKER_URL="filesystem://")
    if args.fresh:
        fresh_database(args.database)
        manage(env, "migrate", "--no-input", "-v", "0")
    os.environ.update(env)
    import django

    django.setup()
    from accounts.models import Project

    keys = None
    if args.project:
        project = Project.objects.get(pk=args.project)
    else:
        project, keys = bench_project()
    figures = seed(
        project=project,
        contacts=args.contacts,
        events=args.events,
        emails=args.emails,
        seed=args.seed,
        days=args.days,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    out = {"database": args.database, "project": str(project.id), **figures}
    if keys:
        out["secretKey"] = keys.secret_key
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
