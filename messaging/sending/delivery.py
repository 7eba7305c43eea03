"""Delivery: turn queued email rows into messages handed to the transport, each exactly once.

1. Claim: a conditional UPDATE moves due QUEUED rows to SENDING (rows locked with SKIP LOCKED on PostgreSQL),
   so a duplicated or retried task finds nothing left to claim. The claim commits before anything is sent. It is a
   lease of DELIVERY_LEASE_SECONDS, renewed while the worker sends (`_Lease`).
2. Send, outside any transaction, over one reused connection: build the MIME bytes, sign them with the sender
   domain's DKIM key, hand them over, and mark the row SENT at once (the window in which a crash could repeat a
   message is one message wide).
3. Transient failures go back to QUEUED with exponential backoff and jitter, up to DELIVERY_MAX_ATTEMPTS (each
   claim counts one); permanent ones (5xx) become FAILED with the server's reply. A lost connection releases the
   rest of the batch. Whatever else one message raises (its MIME or DKIM step) is that message's failure alone.
4. The sweeper (`emails_sweep`) requeues rows whose lease expired, their worker dead (or fails them when their
   attempts are used up), and re-publishes QUEUED rows whose task never arrived, so no accepted email is lost.
5. A task that reaches its soft time limit while it sends (a slow relay) puts the rows it still holds back in the
   queue at once, to be published again with the retries (`_out_of_time`).
"""

import base64
import contextlib
import logging
import math
import random
import time
import uuid
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, prefetch_related_objects
from django.utils import timezone

from contacts.services import contact_stub, events_record_bulk
from core.db import close_if_stuck, execute_prepared, instances_from_rows
from core.errors import ServiceError
from core.metrics import DELIVERY_LATENCY
from core.tasks import time_limit_reached
from core.time import iso
from domains.models import Domain
from domains.services import domain_sign_message, sender_domain_for
from messaging.engagement.links import PAGES, system_links
from messaging.feedback.returnpath import bounce_address
from messaging.feedback.suppression import emails_skip_suppressed
from messaging.models import Email, EmailType, created_bounds, created_q
from messaging.sending import mime
from messaging.sending.personalize import emails_personalize_deferred
from messaging.sending.throttle import send_slot_after, send_slot_wait
from messaging.sending.transport import OutgoingMessage, PreparedMessage, Transport, TransportError
from messaging.vocabulary import email_event_data

logger = logging.getLogger(__name__)
LIST_UNSUBSCRIBE_TYPES = (EmailType.MARKETING, EmailType.HEADLESS)
_PAGES_LISTED = ("unsubscribeUrl", "manageUrl")


@dataclass
class DeliveryReport:
    sent: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    retry: dict = field(default_factory=dict)  # email id -> seconds until the next attempt


# What delivery reads of a claimed row (the rest, the opens, clicks and timestamps, stays in the database).
_DELIVERY_FIELDS = (
    "id",
    "project",
    "contact",
    "to_email",
    "to_name",
    "template",
    "campaign_id",
    "workflow_id",
    "source",
    "type",
    "from_email",
    "from_name",
    "reply_to",
    "subject",
    "html",
    "text",
    "rendered",
    "headers",
    "attachments",
    "message_id",
    "attempts",
    "claimed_at",
    "created_at",
)
_DELIVERY_COLUMNS = [Email._meta.get_field(name) for name in _DELIVERY_FIELDS]
# The claim as one statement that also returns the rows. Each id is looked up on its own (`unnest` and a LATERAL
# subquery, so the planner has no other way in than the primary key, whatever the statistics say), within the
# created_at window its id names (`created_window`: the month or two it can lie in, not all of them); the rows are
# locked, skipping those another worker holds, with their status re-checked on the row committed meanwhile, so each
# row is claimed once; the update then reaches each locked row by its tuple id in its own month's partition
# (created_at names it). The ids travel as one array literal (psycopg adapts a list of UUIDs element by element).
# The status tests are written `(status || '') = ...` so that no index serves them: right after a bulk insert (a
# campaign's batch) the statistics still say no row is QUEUED, and the planner walked the status index through
# every queued row once per claimed row (1.3 s for a claim of 50 among 2,000). A table partitioned by month knows no
# longer that an id names one row (its primary key is (id, created_at)), and an `id = ANY(...)` test planned
# sequential scans of the partitions before their first ANALYZE.
_PG_CLAIM = f"""
UPDATE messaging_email SET status = %s, claimed_at = %s, attempts = attempts + 1, updated_at = %s
FROM (
    SELECT claimed.ctid, claimed.created_at FROM unnest(%s::uuid[]) AS wanted(id) CROSS JOIN LATERAL (
        SELECT ctid, created_at FROM messaging_email
        WHERE id = wanted.id AND created_at BETWEEN %s AND %s AND (status || '') = %s
            AND (next_attempt_at IS NULL OR next_attempt_at <= %s)
        FOR UPDATE SKIP LOCKED
    ) AS claimed
) AS claim
WHERE messaging_email.ctid = claim.ctid AND messaging_email.created_at = claim.created_at
    AND (messaging_email.status || '') = %s
RETURNING {", ".join(f"messaging_email.{field.column}" for field in _DELIVERY_COLUMNS)}
"""  # noqa: S608 - column names from the model


def pg_claim_params(email_ids, now) -> list:
    """The parameters of `_PG_CLAIM` for a claim of `email_ids` at `now`."""
    ids = [uuid.UUID(str(email_id)) for email_id in email_ids]
    start, end = created_bounds(ids)
    queued, sending = Email.Status.QUEUED, Email.Status.SENDING
    array = "{" + ",".join(str(email_id) for email_id in ids) + "}"
    return [sending, now, now, array, start, end, queued, now, queued]


def emails_claim(*, email_ids) -> list[Email]:
    """Move the due QUEUED rows among `email_ids` to SENDING (rows another worker is claiming are skipped) and
    return them, oldest first, with their project and attachments."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            execute_prepared(cursor, _PG_CLAIM, pg_claim_params(email_ids, now))
            emails = instances_from_rows(Email, _DELIVERY_COLUMNS, cursor.fetchall())
    else:
        with transaction.atomic():
            claimed = list(
                Email.objects.select_for_update(skip_locked=True)
                .filter(created_q(email_ids), id__in=email_ids, status=Email.Status.QUEUED)
                .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
                .values_list("id", flat=True)
            )
            Email.objects.filter(id__in=claimed).update(
                status=Email.Status.SENDING, claimed_at=now, attempts=F("attempts") + 1, updated_at=now
            )
        emails = list(Email.objects.filter(id__in=claimed).only(*_DELIVERY_FIELDS))
    emails.sort(key=lambda email: email.created_at)
    # One instance per project and bundle for the whole batch (select_related would build one per row); Django
    # queries for the bundles even when no row has one.
    prefetch_related_objects(emails, "project")
    if any(email.attachments_id for email in emails):
        prefetch_related_objects(emails, "attachments")
    return emails


def _rows(emails: list[Email]) -> Q:
    """The rows of `emails`, loaded with their `created_at`, named by it too: on a partitioned table a statement on
    them then reads their months' partitions only, not every month's index."""
    return Q(id__in=[email.id for email in emails], created_at__in={email.created_at for email in emails})


def retry_delay(attempts: int) -> float:
    base = settings.DELIVERY_RETRY_BASE_SECONDS * 2 ** max(0, attempts - 1)
    return min(3600.0, base * random.uniform(0.8, 1.2))


def _list_unsubscribe(email: Email) -> dict[str, str]:
    """RFC 8058 headers for mail that can be opted out of (and transactional mail that links to the pages),
    unless the caller supplied its own List-Unsubscribe."""
    if any(name.lower() == "list-unsubscribe" for name in email.headers) or email.contact_id is None:
        return {}
    if email.type not in LIST_UNSUBSCRIBE_TYPES:
        # Looked for before the links are signed: most transactional mail links to neither page (and to nothing of
        # the service at all, which one scan tells).
        base = settings.PUBLIC_URL
        body = email.html or email.text or ""
        if base not in body or not any(f"{base}/{PAGES[page]}" in body for page in _PAGES_LISTED):
            return {}
    links = system_links(contact_id=email.contact_id, email_id=email.id)
    targets = [f"<{links['unsubscribeUrl']}>"]
    if settings.UNSUBSCRIBE_MAILBOX:
        targets.append(f"<mailto:{settings.UNSUBSCRIBE_MAILBOX}?subject=unsubscribe-{email.id}>")
    return {"List-Unsubscribe": ", ".join(targets), "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}


def _attachments(email: Email) -> list[mime.Attachment]:
    if email.attachments_id is None:
        return []
    return [
        mime.Attachment(
            filename=item["filename"],
            content=base64.b64decode(item["content"]),
            content_type=item["contentType"],
            content_id=item.get("contentId"),
            disposition=item.get("disposition") or "attachment",
        )
        for item in email.attachments.items
    ]


def build_message(email: Email, domain: Domain) -> PreparedMessage:
    headers = {**email.headers, **_list_unsubscribe(email)}
    attachments = _attachments(email)
    # The text part its sender wrote (a message submitted over SMTP), else one made from the HTML.
    text = email.text if email.text is not None else mime.html_to_text(email.html)
    raw = mime.build(
        mime.MimeMessage(
            from_email=email.from_email,
            from_name=email.from_name,
            to_email=email.to_email,
            to_name=email.to_name,
            subject=email.subject,
            html=email.html,
            text=text,
            message_id=email.message_id,
            date=timezone.now(),
            reply_to=email.reply_to,
            headers=headers,
            attachments=attachments,
        )
    )
    raw = domain_sign_message(domain=domain, message=raw) + raw

    def as_email_message() -> OutgoingMessage:
        message = OutgoingMessage(
            raw=raw,
            subject=email.subject,
            body=text,
            from_email=mime.format_address(email.from_name, email.from_email),
            to=[mime.format_address(email.to_name, email.to_email)],
            reply_to=[email.reply_to] if email.reply_to else None,
            headers={"Message-ID": email.message_id, **headers},
        )
        if email.html:  # a text-only message has none
            message.attach_alternative(email.html, "text/html")
        for attachment in attachments:
            message.attach(attachment.filename, attachment.content, attachment.content_type)
        return message

    # With a return-path host, reports of this message come back to an address that names it (feedback.returnpath).
    bounce = bounce_address(email_id=email.id, domain_name=domain.name)
    return PreparedMessage(
        raw=raw,
        envelope_from=bounce or mime.format_address("", email.from_email),
        recipients=[mime.format_address("", email.to_email)],
        as_email_message=as_email_message,
    )


class _Lease:
    """A worker's hold on the rows it claimed, renewed while it sends (docs/messaging.md).

    The rows' `claimed_at` is both the lease's start and the holder's token: the sweeper takes rows whose
    `claimed_at` is older than DELIVERY_LEASE_SECONDS, and every renewal and mark of the holder requires its own
    value. Renewing is one UPDATE of the rows still held, checked before each message and due every sixth of the
    lease: a fast batch never renews, and a slow relay (EMAIL_TIMEOUT per message) keeps its rows for as long as it
    keeps sending. A worker that outlived its lease anyway (one message or a stall longer than five sixths of it)
    learns at its next renewal which rows another worker took over, and sends none of them; only the message it was
    sending meanwhile may go twice.
    """

    def __init__(self) -> None:
        self.interval = settings.DELIVERY_LEASE_SECONDS / 6
        self.renewed = time.monotonic()

    def keep(self, emails: list[Email]) -> list[Email]:
        """`emails` (rows held until now) without those lost to another worker, their lease renewed if due."""
        if not emails or time.monotonic() - self.renewed < self.interval:
            return emails
        now = timezone.now()
        token = emails[0].claimed_at  # one claim, one value; renewed together
        held = Email.objects.filter(_rows(emails), status=Email.Status.SENDING, claimed_at=token)
        renewed = held.update(claimed_at=now)
        self.renewed = time.monotonic()
        if renewed < len(emails):
            kept = set(
                Email.objects.filter(_rows(emails), status=Email.Status.SENDING, claimed_at=now).values_list(
                    "id", flat=True
                )
            )
            logger.warning("Lease expired on %d email(s); another worker has them", len(emails) - len(kept))
            emails = [email for email in emails if email.id in kept]
        for email in emails:
            email.claimed_at = now
        return emails


_MARK_SENT = (
    "UPDATE messaging_email SET status = 'SENT', sent_at = %s, provider_message_id = %s, last_error = '', "
    "updated_at = %s{copy} WHERE id = %s AND status = 'SENDING' AND claimed_at = %s"
)
_MARK_SENT_SQL = _MARK_SENT.format(copy="")
# A row the fan-out stored unrendered keeps what delivery made of it: the copy that was sent.
_MARK_SENT_PERSONALIZED_SQL = _MARK_SENT.format(copy=", subject = %s, html = %s, rendered = true")
_SENT_AT = Email._meta.get_field("sent_at")


def _mark_sent(cursor, email: Email, sent_at, provider_id: str) -> bool:
    """Mark a row SENT; False when another worker had taken it over (it records the row's outcome)."""
    # Once per delivered message: plain SQL (the ORM's compilation of this UPDATE costs more than the UPDATE),
    # prepared once per connection (PostgreSQL's planning was 60 % of the statement's cost), and on PostgreSQL the
    # values as they are (psycopg adapts datetimes and UUIDs; SQLite compares the text forms Django writes).
    # Not narrowed to the row's month by its `created_at`, unlike the ORM's statements on loaded rows: PostgreSQL would
    # plan this prepared statement again for each value (a plan for one month looks cheaper than the generic one for
    # all), and planning costs more than looking the id up in each month's index (docs/performance.md).
    email_id, lease = email.id, email.claimed_at
    if cursor.db.vendor != "postgresql":
        email_id = Email._meta.pk.get_db_prep_value(email_id, cursor.db)
        sent_at, lease = (_SENT_AT.get_db_prep_value(moment, cursor.db) for moment in (sent_at, lease))
    sql, copy = (_MARK_SENT_SQL, []) if email.rendered else (_MARK_SENT_PERSONALIZED_SQL, [email.subject, email.html])
    execute_prepared(cursor, sql, [sent_at, provider_id, sent_at, *copy, email_id, lease])
    return cursor.rowcount == 1


def _mark(email: Email, status: str, **fields) -> None:
    Email.objects.filter(_rows([email]), status=Email.Status.SENDING, claimed_at=email.claimed_at).update(
        status=status, updated_at=timezone.now(), **fields
    )


def _release(emails: list[Email], error: str, report: DeliveryReport) -> None:
    """Put claimed but unsent rows back in the queue (or fail those out of attempts)."""
    for email in emails:
        if email.attempts >= settings.DELIVERY_MAX_ATTEMPTS:
            _mark(email, Email.Status.FAILED, last_error=error)
            report.failed.append((email, error))
            continue
        delay = retry_delay(email.attempts)
        _mark(
            email,
            Email.Status.QUEUED,
            last_error=error,
            claimed_at=None,
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
        )
        report.retry[email.id] = delay


def _defer(emails: list[Email], wait: float, report: DeliveryReport) -> None:
    """Put back the rows of a project over its send rate until its bucket has a token for each, in whole seconds
    (each row one token later than the one before it). Waiting for the rate is no attempt: the claim's is undone."""
    now = timezone.now()
    moments = defaultdict(list)
    for position, email in enumerate(emails):
        moments[math.ceil(send_slot_after(wait, position))].append(email)
    for delay, group in moments.items():
        Email.objects.filter(_rows(group), status=Email.Status.SENDING, claimed_at=group[0].claimed_at).update(
            status=Email.Status.QUEUED,
            claimed_at=None,
            attempts=F("attempts") - 1,
            next_attempt_at=now + timedelta(seconds=delay),
            updated_at=now,
        )
        for email in group:
            report.retry[email.id] = delay


def _record_events(report: DeliveryReport) -> None:
    by_project = defaultdict(list)
    for email, sent_at in report.sent:
        by_project[email.project].append((email, "email.sent", email_event_data(email, sentAt=iso(sent_at))))
    for email, error in report.failed:
        by_project[email.project].append((email, "email.failed", email_event_data(email, error=error)))
    for project, rows in by_project.items():
        rows = [(email, name, data) for email, name, data in rows if email.contact_id is not None]
        events_record_bulk(
            project=project,
            items=[(contact_stub(project, email.contact_id), name, data) for email, name, data in rows],
            email_ids=[email.id for email, _, _ in rows],
        )


def _out_of_time(sending: Email | None, rest: list[Email], report: DeliveryReport) -> None:
    """The task's soft time limit struck while it sent: the rows it still holds go back to QUEUED, due now, and into
    the report's retries, which the task publishes at once. The row being sent keeps its attempt (its message may
    have gone: the one a crash may repeat), so a message that alone outlasts the limit stops after its attempts; the
    rest were not tried and get theirs back. A row already done is not held any more and is left as it is."""
    close_if_stuck()
    now = timezone.now()
    back = []
    for group, untried in (([sending] if sending else [], 0), (rest, 1)):
        if not group:
            continue
        held = Email.objects.filter(_rows(group), status=Email.Status.SENDING, claimed_at=group[0].claimed_at)
        ids = list(held.values_list("id", flat=True))
        held.filter(id__in=ids).update(
            status=Email.Status.QUEUED,
            claimed_at=None,
            attempts=F("attempts") - untried,
            next_attempt_at=None,
            updated_at=now,
        )
        back += ids
    report.retry.update(dict.fromkeys(back, 0))
    logger.warning("Delivery out of time; %d email(s) back in the queue", len(back))


def _fail(email: Email, error: str, report: DeliveryReport) -> None:
    _mark(email, Email.Status.FAILED, last_error=error)
    report.failed.append((email, error))


def _prepare(email: Email, domains: dict) -> PreparedMessage:
    """The signed message of `email`; a `ServiceError` when the service refuses to send it (no retry can help)."""
    key = (email.project_id, email.from_email)
    if key not in domains:
        try:
            domains[key] = sender_domain_for(project=email.project, address=email.from_email, for_signing=True)
        except ServiceError as exc:
            domains[key] = exc
    domain = domains[key]
    if isinstance(domain, ServiceError):
        raise domain
    return build_message(email, domain)


def _send_claimed(emails: list[Email], report: DeliveryReport) -> None:
    """Send the claimed rows in order; each row ends SENT, FAILED or back in the queue, whatever it raises.

    A project over its send rate has its rows put back until its tokens are (`_defer`). A message that cannot be
    built or signed (stored content the MIME or DKIM step rejects, a project gone) must
    not stop the rest of the batch, which may belong to other projects: it is retried like a transient failure up
    to its attempts, or failed at once when the service refuses it (`ServiceError`: an unverified domain, a DKIM
    key that no longer decrypts). Errors of the database after a message went out are not caught: its row stays
    SENDING and is the one message a crash may repeat."""
    domains: dict[tuple, Domain | ServiceError] = {}
    lease = _Lease()
    email = None
    try:
        with Transport() as transport, connection.cursor() as cursor:
            while emails := lease.keep(emails):
                email, emails = emails[0], emails[1:]
                wait = send_slot_wait(email.project_id)
                if wait:  # this project waits for its rate; the others' mail goes on
                    own = [email, *(other for other in emails if other.project_id == email.project_id)]
                    _defer(own, wait, report)
                    emails = [other for other in emails if other.project_id != email.project_id]
                    continue
                try:
                    provider_id = transport.send(_prepare(email, domains))
                except TransportError as exc:
                    if exc.permanent:
                        _fail(email, str(exc), report)
                        continue
                    _release([email], str(exc), report)
                    if exc.connection_lost:
                        _release(emails, str(exc), report)
                        return
                    continue
                except ServiceError as exc:
                    _fail(email, exc.message, report)
                    continue
                except mime.UnsafeHeader as exc:
                    # A row no input rule would accept today (stored before one existed, or edited by hand): the
                    # message cannot be written safely, and retrying will not change that.
                    _fail(email, f"Not sent: {exc}", report)
                    continue
                except Exception as exc:
                    if time_limit_reached(exc):
                        raise  # not this message's failure: the batch's time is up
                    logger.exception("Could not send email %s", email.id)
                    _release([email], f"Could not send the message: {type(exc).__name__}: {exc}"[:1000], report)
                    continue
                sent_at = timezone.now()
                if _mark_sent(cursor, email, sent_at, provider_id):
                    report.sent.append((email, sent_at))
                    DELIVERY_LATENCY.observe((sent_at - email.created_at).total_seconds())
    except Exception as exc:
        if not time_limit_reached(exc):
            raise
        _out_of_time(email, emails, report)


@contextmanager
def _unflushed_marks():
    """On PostgreSQL, let the per-message SENT marks commit without waiting for their WAL flush.

    Waiting for the disk after every message was half of a delivery worker's time per message. The claim has
    committed durably before this; a worker that dies still leaves every mark it made (the server has them). Only a
    crash of the database server itself can drop the last fraction of a second of marks: those rows stay SENDING
    and the sweeper sends them again, so such a crash may repeat a message but never loses one.
    """
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
    try:
        yield
    finally:
        with contextlib.suppress(Exception), connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def emails_deliver(*, email_ids) -> DeliveryReport:
    """Claim and send the given emails; return what happened (the task schedules the retries)."""
    report = DeliveryReport()
    emails = emails_claim(email_ids=email_ids)
    if not emails:
        return report
    emails = emails_skip_suppressed(emails=emails)
    emails = emails_personalize_deferred(emails, lambda email, error: _fail(email, error, report))
    try:
        with _unflushed_marks():
            _send_claimed(emails, report)
    except TransportError as exc:  # the connection could not even be opened
        _release(emails, str(exc), report)
    finally:
        _record_events(report)
    return report


STRANDED_ERROR = "The worker sending it stopped before it finished, on each of its attempts"


def emails_sweep(*, now=None, limit: int = 5000) -> list:
    """Take back the rows of workers that died; return the ids to publish again.

    1. Rows SENDING past their lease belong to a worker that died (a working one renews its lease). Each claim counted an attempt: rows with
       attempts left go back to QUEUED, the others become FAILED with an `email.failed` event, so a message that
       kills every worker sending it stops coming back.
    2. The ids of the requeued rows and of QUEUED rows whose task is overdue are returned for publishing.
    """
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    with transaction.atomic():
        rows = list(
            Email.objects.select_for_update(skip_locked=True)
            .filter(status=Email.Status.SENDING, claimed_at__lt=stale)
            .only(*_DELIVERY_FIELDS)[:limit]
        )
        exhausted = [email for email in rows if email.attempts >= settings.DELIVERY_MAX_ATTEMPTS]
        stranded = [email for email in rows if email.attempts < settings.DELIVERY_MAX_ATTEMPTS]
        taken = Email.objects.filter(status=Email.Status.SENDING, claimed_at__lt=stale)
        taken.filter(_rows(stranded)).update(
            status=Email.Status.QUEUED, claimed_at=None, next_attempt_at=None, updated_at=now
        )
        taken.filter(_rows(exhausted)).update(
            status=Email.Status.FAILED, claimed_at=None, last_error=STRANDED_ERROR, updated_at=now
        )
    if exhausted:
        prefetch_related_objects(exhausted, "project")
        _record_events(DeliveryReport(failed=[(email, STRANDED_ERROR) for email in exhausted]))
    overdue = now - timedelta(seconds=settings.DELIVERY_PUBLISH_GRACE_SECONDS)
    waiting = (
        Email.objects.filter(status=Email.Status.QUEUED, updated_at__lt=overdue)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lt=overdue))
        .order_by("created_at")
        .values_list("id", flat=True)[: max(0, limit - len(stranded))]
    )
    return [email.id for email in stranded] + list(waiting)
