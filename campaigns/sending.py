"""Sending a campaign: now or at a set time, the fan-out of its emails, its end, a cancel, and test messages.

1. `campaign_send` (the API, the admin) starts a campaign at once or schedules it; the schedule lives in the
   database, so restarting every process loses none.
2. `campaigns_start_due` (celery-beat, every minute) starts the scheduled campaigns that are due. Each is claimed
   under a row lock and re-checked, so two overlapping runs never start one twice.
3. Starting creates the fan-out job (`accounts.jobs`, type `campaign_send`), published after the commit;
   `jobs_requeue_stalled` publishes it again if its message is lost or its worker dies.
4. The fan-out (`campaign_fan_out`) walks the audience in keyset batches ordered by email (the (project, email)
   index), and per batch, in one transaction: inserts the emails unrendered (`emails_queue` with the `CAMPAIGN` policy; delivery
   personalizes each as it sends it), and records the last email as the job's checkpoint. A worker that dies
   loses at most its uncommitted batch, and the next resumes after the checkpoint; a batch leaves out the contacts
   that have an email of the campaign, so one done twice is harmless. Only one batch of contacts is in memory at a time.
5. `campaign_finish` moves SENDING to SENT once the fan-out job has completed and none of the campaign's emails is
   QUEUED or SENDING; the fan-out calls it when it ends and `campaigns_finish_sending` (every minute) afterwards.
6. A fan-out that failed for good leaves the campaign SENDING, never SENT: part of its audience has no email. Its
   job carries the error; the operator resumes it (`campaign_fan_out_resume`, a new job from the failed one's
   checkpoint) or cancels the campaign.
"""

import logging
from datetime import UTC, datetime, time

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from accounts.jobs.services import Report, job_create, job_run
from accounts.models import Job
from accounts.tenancy.selectors import project_has_member_email
from campaigns.models import Campaign, CampaignStatus
from campaigns.selectors import campaign_audience, campaign_emails
from campaigns.services import require_editable
from core.commit import after_commit
from core.db import locked
from core.errors import BadRequest, BillingLimitExceeded, Conflict, ErrorCode, Forbidden, ValidationFailed
from core.time import iso
from messaging.content.services import content_check
from messaging.models import Email
from messaging.sending.services import (
    BLOCKED_REASON,
    CAMPAIGN,
    Address,
    Recipient,
    SendContent,
    email_send_test,
    emails_allowance_check,
    emails_allowance_hold,
    emails_cancel,
    emails_queue,
)

logger = logging.getLogger(__name__)
JOB_TYPE = "campaign_send"
_UNFINISHED = (Email.Status.QUEUED, Email.Status.SENDING)


def parse_schedule(value) -> datetime | None:
    """`scheduledFor` as given: null, an ISO 8601 date-time (UTC when it names no offset), a date (its midnight UTC)
    or milliseconds since the epoch, as a JavaScript date parser takes them. Anything else is 400."""
    if value is None:
        return None
    moment = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            moment = None
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = parse_datetime(text)
            if moment is None and (day := parse_date(text)) is not None:
                moment = datetime.combine(day, time(), tzinfo=UTC)
        except ValueError:  # well-formed but impossible (2026-02-30)
            moment = None
    if moment is None:
        raise BadRequest(
            f"scheduledFor {value!r} is not a date; send an ISO 8601 date-time such as 2026-12-01T09:00:00Z",
            details={"field": "scheduledFor"},
        )
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _publish(job_id) -> None:
    from campaigns.tasks import campaign_fan_out_task

    campaign_fan_out_task.delay(str(job_id))


_NOT_SENT_FIELDS = ["not_sent_count", "not_sent_reason", "not_sent_at"]


def _start(campaign: Campaign, *, now: datetime, audience: int) -> None:
    """SENDING from now, with its fan-out job (published once the caller's transaction commits). The row is the
    caller's, locked; `audience` its audience counted now, for the job's progress (the emails created replace it
    when the fan-out ends). What an earlier attempt left unsent is forgotten: this one starts afresh."""
    job = job_create(project=campaign.project, type=JOB_TYPE, params={"campaignId": str(campaign.id)})
    campaign.status = CampaignStatus.SENDING
    campaign.sent_at = now
    campaign.job = job
    campaign.total_recipients = audience
    campaign.not_sent_count, campaign.not_sent_reason, campaign.not_sent_at = 0, "", None
    campaign.updated_at = now
    campaign.save(
        update_fields=["status", "sent_at", "job", "total_recipients", "scheduled_for", "updated_at", *_NOT_SENT_FIELDS]
    )
    # A publish lost with the broker is published again by the stalled-jobs sweeper.
    after_commit(lambda: _publish(job.id), what=f"publish the fan-out job {job.id} (the stalled-jobs sweeper will)")


@transaction.atomic
def campaign_send(*, campaign: Campaign, scheduled_for=None) -> tuple[Campaign, str]:
    """Send now (`scheduled_for` None) or schedule; returns the campaign and the message for the caller. Only from DRAFT or
    SCHEDULED (409); `scheduled_for` must parse (400) and lie ahead (422); the sender must still be on a verified
    domain (403); the audience must not be empty (422 at `audienceType`) nor larger than what is left of the
    project's monthly campaigns cap (429 `BILLING_LIMIT_EXCEEDED`, checked when the send is asked for)."""
    (campaign,) = locked(Campaign.objects.select_related("project", "segment").filter(pk=campaign.pk))
    require_editable(campaign)
    when = parse_schedule(scheduled_for)
    now = timezone.now()
    if when is not None and when <= now:
        raise ValidationFailed.field("scheduledFor", "Must be in the future", "custom", received=iso(when))
    content_check(project=campaign.project, values={"from_email": campaign.from_email})
    audience = campaign_audience(campaign=campaign, now=now).count()
    if not audience:
        raise ValidationFailed.field("audienceType", "Campaign has no recipients", "custom")
    emails_allowance_check(project=campaign.project, source=Email.Source.CAMPAIGN, count=audience)
    if when is not None:
        campaign.status, campaign.scheduled_for, campaign.scheduled_at = CampaignStatus.SCHEDULED, when, now
        campaign.updated_at = now
        campaign.save(update_fields=["status", "scheduled_for", "scheduled_at", "updated_at"])
        return campaign, f"Campaign scheduled for {iso(when)}"
    campaign.scheduled_for = None
    _start(campaign, now=now, audience=audience)
    return campaign, "Campaign is being sent"


def _not_sent(campaign: Campaign, *, count: int, now: datetime, nothing_sent: bool) -> None:
    """Record on the locked row that `count` of the audience get no email because of the monthly cap. A campaign
    that sent nothing at all is a DRAFT again, its schedule cleared, as a cancel leaves one: it can be sent once the
    cap allows."""
    campaign.not_sent_count, campaign.not_sent_reason, campaign.not_sent_at = count, BLOCKED_REASON, now
    fields = [*_NOT_SENT_FIELDS, "updated_at"]
    if nothing_sent:
        campaign.status, campaign.scheduled_for, campaign.sent_at = CampaignStatus.DRAFT, None, None
        fields += ["status", "scheduled_for", "sent_at"]
    campaign.updated_at = now
    campaign.save(update_fields=fields)


def _start_due(campaign: Campaign, *, now: datetime) -> bool:
    """Start a due campaign, checking the cap again: its audience may have grown since it was scheduled (a PUT,
    new contacts) and the month's usage too. When the audience no longer fits what is left, nothing is sent and the
    campaign says why (`_not_sent`), as a send asked for now would have been refused (429)."""
    audience = campaign_audience(campaign=campaign, now=now).count()
    try:
        emails_allowance_check(project=campaign.project, source=Email.Source.CAMPAIGN, count=audience)
    except BillingLimitExceeded as refused:
        logger.warning("Scheduled campaign %s not started: %s", campaign.id, refused)
        _not_sent(campaign, count=audience, now=now, nothing_sent=True)
        return False
    _start(campaign, now=now, audience=audience)
    return True


def campaigns_start_due(*, limit: int = 100) -> int:
    """Start the SCHEDULED campaigns whose time has come (all projects), soonest first; returns how many started
    (a campaign the cap no longer allows is left unsent, with why)."""
    now = timezone.now()
    due = Campaign.objects.filter(status=CampaignStatus.SCHEDULED, scheduled_for__lte=now)
    started = 0
    for campaign_id in list(due.order_by("scheduled_for").values_list("id", flat=True)[:limit]):
        with transaction.atomic():
            # Claimed under its lock and re-checked: another run holding it, or a cancel meanwhile, leaves it.
            for campaign in locked(due.select_related("project", "segment").filter(pk=campaign_id), skip_locked=True):
                started += _start_due(campaign, now=now)
    return started


def _content(campaign: Campaign) -> SendContent:
    return SendContent(
        subject=campaign.subject,
        body=campaign.body,
        sender=Address(email=campaign.from_email, name=campaign.from_name or campaign.project.name),
        reply_to=campaign.reply_to,
        type=campaign.type,
        source=Email.Source.CAMPAIGN,
        campaign_id=campaign.id,
        campaign_since=campaign.sent_at,
    )


def _still_sending(campaign: Campaign, job: Job) -> bool:
    """Under the campaign's row lock, so that a cancel and a batch never interleave; a campaign cancelled back to
    DRAFT and sent again has a new job, and the old one stops."""
    return (
        Campaign.objects.select_for_update()
        .filter(pk=campaign.pk, status=CampaignStatus.SENDING, job_id=job.id)
        .exists()
    )


def _fan_out(job: Job, report: Report) -> dict:
    campaign = Campaign.objects.select_related("project", "segment").get(pk=job.params["campaignId"])
    after, queued = job.checkpoint.get("after"), job.checkpoint.get("queued", 0)
    content = _content(campaign)
    # One clock for the whole audience (conditions such as "within 7 days"): the moment sending started.
    audience = campaign_audience(campaign=campaign, now=campaign.sent_at).values_list("id", "email")
    total = max(campaign.total_recipients, 1)
    while True:
        batch = audience.filter(email__gt=after) if after is not None else audience
        contacts = list(batch.order_by("email")[: settings.CAMPAIGN_BATCH_SIZE])
        if not contacts:
            return {"queued": queued}
        with transaction.atomic():
            if not _still_sending(campaign, job):
                return {"queued": queued, "stopped": True}
            # What the monthly cap leaves, with the count held until this batch commits: campaigns fanning out
            # together take it one batch at a time, and none queues past it.
            room = emails_allowance_hold(project=campaign.project, source=Email.Source.CAMPAIGN, count=len(contacts))
            if room:
                recipients = [Recipient(email=email, contact_id=contact_id) for contact_id, email in contacts[:room]]
                emails_queue(project=campaign.project, content=content, recipients=recipients, policy=CAMPAIGN)
                after, queued = contacts[room - 1][1], queued + room
            if room < len(contacts):
                return {"queued": queued, "notSent": _cut(campaign, audience, after)}
            report(min(99, queued * 100 // total), {"queued": queued}, {"after": after, "queued": queued})


def _cut(campaign: Campaign, audience, after: str | None) -> int:
    """The fan-out stops at the cap: the audience after `after` (the last contact queued) is recorded as not sent,
    in the batch's transaction; returns how many that is."""
    rest = (audience.filter(email__gt=after) if after is not None else audience).count()
    nothing_sent = not campaign_emails(campaign).exists()
    _not_sent(campaign, count=rest, now=timezone.now(), nothing_sent=nothing_sent)
    logger.warning("Campaign %s stopped at the monthly cap: %s of its audience not sent", campaign.id, rest)
    return rest


def campaign_fan_out(*, job_id) -> None:
    """Run (or resume) a campaign's fan-out job, then count its emails and end it if they are all delivered."""
    job = job_run(job_id, _fan_out)
    if job is None:  # another worker holds it, or it had ended
        return
    campaign_id = job.params["campaignId"]
    Campaign.objects.filter(pk=campaign_id).update(
        total_recipients=Email.objects.filter(campaign_id=campaign_id).count()
    )
    campaign_finish(campaign_id=campaign_id)


def campaign_finish(*, campaign_id) -> bool:
    """SENDING -> SENT once the fan-out has ended and every email of the campaign is terminal (neither QUEUED nor
    SENDING); returns whether it moved."""
    with transaction.atomic():
        held = locked(Campaign.objects.select_related("job").filter(pk=campaign_id, status=CampaignStatus.SENDING))
        campaign = held[0] if held else None
        # A fan-out still at work, or one that failed for good: the audience is not covered, so not SENT.
        if campaign is None or (campaign.job is not None and campaign.job.status != Job.Status.COMPLETED):
            return False
        if campaign_emails(campaign).filter(status__in=_UNFINISHED).exists():
            return False
        campaign.status, campaign.updated_at = CampaignStatus.SENT, timezone.now()
        campaign.save(update_fields=["status", "updated_at"])
    logger.info("Campaign %s sent", campaign_id)
    return True


@transaction.atomic
def campaign_fan_out_resume(*, campaign: Campaign) -> Campaign:
    """Start the fan-out of a SENDING campaign again where its failed job stopped (409 for any other campaign): a
    new job with the failed one's checkpoint, published after the commit. Recipients the failed job queued are not
    queued again (the checkpoint, and the fan-out's rule of one email per contact behind it)."""
    (campaign,) = locked(Campaign.objects.select_related("job", "project").filter(pk=campaign.pk))
    failed = campaign.job
    if campaign.status != CampaignStatus.SENDING or failed is None or failed.status != Job.Status.FAILED:
        raise Conflict(
            "Only a SENDING campaign whose fan-out failed can be resumed",
            code=ErrorCode.CONFLICT,
            details={"status": campaign.status, "jobStatus": failed.status if failed else None},
        )
    job = job_create(project=campaign.project, type=JOB_TYPE, params=failed.params)
    job.checkpoint = failed.checkpoint
    job.save(update_fields=["checkpoint"])
    campaign.job, campaign.updated_at = job, timezone.now()
    campaign.save(update_fields=["job", "updated_at"])
    after_commit(lambda: _publish(job.id), what=f"publish the fan-out job {job.id} (the stalled-jobs sweeper will)")
    return campaign


def campaigns_finish_sending() -> int:
    """`campaign_finish` for every SENDING campaign (all projects); returns how many became SENT."""
    sending = Campaign.objects.filter(status=CampaignStatus.SENDING).values_list("id", flat=True)
    return sum(campaign_finish(campaign_id=campaign_id) for campaign_id in list(sending))


@transaction.atomic
def campaign_cancel(*, campaign: Campaign) -> Campaign:
    """Stop a SCHEDULED or SENDING campaign (else 409). Its emails not yet claimed by delivery become CANCELLED
    (the fan-out stops before its next batch). If none of its emails had been handed to delivery, the campaign goes
    back to DRAFT, its cancelled emails removed and its schedule cleared, as if it had never been sent; otherwise it
    is CANCELLED."""
    (campaign,) = locked(Campaign.objects.select_related("segment").filter(pk=campaign.pk))
    if campaign.status not in (CampaignStatus.SCHEDULED, CampaignStatus.SENDING):
        raise Conflict(
            f"Campaign is {campaign.status}; only a SCHEDULED or SENDING campaign can be cancelled",
            code=ErrorCode.CAMPAIGN_NOT_EDITABLE,
            details={"status": campaign.status},
        )
    if emails_cancel(campaign_id=campaign.id):
        campaign.status = CampaignStatus.CANCELLED
    else:
        campaign.status, campaign.scheduled_for, campaign.sent_at = CampaignStatus.DRAFT, None, None
    campaign.updated_at = timezone.now()
    campaign.save(update_fields=["status", "scheduled_for", "sent_at", "updated_at"])
    return campaign


def campaign_send_test(*, campaign: Campaign, email: str) -> str:
    """One test message of the campaign to a project member's address (else 403), rendered with that address's
    contact data if it has any, subject prefixed `[TEST] `, untracked and not counted (`email_send_test`)."""
    if not project_has_member_email(project=campaign.project, email=email):
        raise Forbidden("Test emails can only be sent to project members", details={"email": email})
    content = _content(campaign)
    content.campaign_id = None  # a test is not one of the campaign's emails
    email_send_test(project=campaign.project, to=Address(email=email), content=content)
    return f"Test email sent to {email}"
