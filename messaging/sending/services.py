"""The one send path: every email of the service (the send API, campaigns, workflows, test sends) is queued here
and delivered by `messaging.sending.delivery`.

Queueing, per recipient and in order: upsert the contact through the contacts app's data rules, render subject
and body with the recipient's variables, store the email row, all in one transaction. On PostgreSQL a single
recipient without attachments or a subscription change (most API sends) takes two statements and no transaction
instead: read the contact, render, then write contact and email in one statement that applies only if the contact
is unchanged (else the transaction above). Delivery tasks are enqueued once the rows are committed; if the broker
cannot take them, the rows stay QUEUED and the sweeper sends them later, so an accepted email is never lost.
"""

import base64
import logging
import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.billing import usage
from accounts.billing.models import Category
from accounts.models import Project
from contacts.data_rules import validate_data
from contacts.models import Contact
from contacts.services import normalize_email
from contacts.upsert import contact_upsert, contact_upsert_read, contact_upsert_write
from core.batches import in_batches
from core.db import insert_prepared, insert_varied
from core.errors import NotFound, ValidationFailed
from core.ids import random_uuids
from domains.services import sender_domain_for
from messaging.feedback.suppression import recipients_check_suppressed
from messaging.models import AttachmentBundle, DeferredContent, Email, EmailType, Template
from messaging.sending import parse
from messaging.sending.dispatch import enqueue_bulk_delivery, enqueue_delivery
from messaging.sending.mime import Attachment
from messaging.sending.parse import Address
from messaging.sending.personalize import Personal, not_rendered, personalize

logger = logging.getLogger(__name__)
OPT_OUT_TYPES = (EmailType.MARKETING, EmailType.HEADLESS)
# The billing category each source counts in; test sends count in none (docs/billing.md).
CATEGORY_OF_SOURCE = {
    Email.Source.API: Category.TRANSACTIONAL,
    Email.Source.CAMPAIGN: Category.CAMPAIGNS,
    Email.Source.WORKFLOW: Category.WORKFLOWS,
}


@dataclass
class SendContent:
    """What every recipient of one send gets, before personalisation."""

    subject: str
    body: str
    sender: Address
    reply_to: str = ""
    type: str = EmailType.TRANSACTIONAL
    template: Template | None = None
    headers: dict[str, str] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    source: str = Email.Source.API
    campaign_id: uuid.UUID | None = None
    workflow_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Queued:
    contact: Contact
    email: Email


def _check_opt_outs(project: Project, recipients: list[Address], content: SendContent, subscribed: bool | None):
    """With a marketing or headless template, an existing contact who opted out (and is not being resubscribed
    by this request) rejects the whole request before anything is stored."""
    if content.type not in OPT_OUT_TYPES or subscribed is True:
        return
    emails = {normalize_email(address.email): index for index, address in enumerate(recipients)}
    opted_out = Contact.objects.filter(project=project, email__in=emails, subscribed=False).values_list(
        "email", flat=True
    )
    for email in opted_out:
        index = emails[email]
        field_path = f"to.{index}" if len(recipients) > 1 else "to"
        raise ValidationFailed.field(
            field_path, f"{email} has unsubscribed and cannot receive {content.type.lower()} email", "custom"
        )


def _bundle(project: Project, attachments: list[Attachment]) -> AttachmentBundle | None:
    if not attachments:
        return None
    items = [
        {
            "filename": a.filename,
            "contentType": a.content_type,
            "contentId": a.content_id,
            "disposition": a.disposition,
            "content": base64.b64encode(a.content).decode("ascii"),
        }
        for a in attachments
    ]
    return AttachmentBundle.objects.create(
        project=project, items=items, total_bytes=sum(len(a.content) for a in attachments)
    )


def _email_row(
    *,
    project: Project,
    content: SendContent,
    domain_name: str,
    to: Address,
    contact: Contact | None,
    variables: dict,
    bundle: AttachmentBundle | None,
    now,
    fail_refused: bool = False,
    email_id: uuid.UUID | None = None,
) -> Email:
    """One recipient's email row, personalized; content that this recipient's data pushes past a rendering limit
    or the size cap is refused (422), or with `fail_refused` gives a FAILED row saying why (a batch goes on without
    that recipient's mail). `email_id` is the caller's key for the row (a workflow step's), so that running the
    same send twice cannot store two."""
    email_id = email_id or uuid.uuid4()
    failure = ""
    try:
        personal = personalize(
            project=project,
            subject=content.subject,
            body=content.body,
            email_type=content.type,
            source=content.source,
            email_id=email_id,
            to_email=to.email,
            contact_id=contact.id if contact else None,
            subscribed=contact.subscribed if contact else True,
            variables=variables,
            attachment_bytes=bundle.total_bytes if bundle else 0,
        )
    except ValidationFailed as refused:
        if not fail_refused:
            raise
        personal, failure = Personal(subject=content.subject[:998], html=""), not_rendered(refused)
    email = Email(
        id=email_id,
        project=project,
        contact=contact,
        to_email=to.email,
        to_name=to.name,
        template=content.template,
        campaign_id=content.campaign_id,
        workflow_id=content.workflow_id,
        source=content.source,
        type=content.type,
        from_email=content.sender.email,
        from_name=content.sender.name,
        reply_to=content.reply_to,
        subject=personal.subject,
        html=personal.html,
        headers=content.headers,
        attachments=bundle,
        message_id=f"<{email_id}@{domain_name}>",
        created_at=now,
        updated_at=now,
    )
    if failure:
        email.status, email.last_error = Email.Status.FAILED, failure
    return email


def _recipient_data(data: dict | None, recipient: Address) -> dict:
    recipient_data = dict(data or {})
    if recipient.name:
        recipient_data["name"] = recipient.name
    return recipient_data


def _opted_out(email: Email, contact: Contact, content: SendContent) -> None:
    """For a caller that stores rather than refuses (a workflow step goes on): a marketing or headless email to an
    unsubscribed contact is kept SUPPRESSED and never delivered."""
    if content.type in OPT_OUT_TYPES and not contact.subscribed and email.status == Email.Status.QUEUED:
        email.status, email.last_error = Email.Status.SUPPRESSED, "The contact has unsubscribed"


def _queue_single(
    *,
    project: Project,
    recipient: Address,
    content: SendContent,
    data: dict | None,
    domain_name: str,
    allowance: usage.Allowance | None,
    email_id: uuid.UUID | None,
    store_opted_out: bool,
) -> Queued | None:
    """One recipient without attachments or a subscription change, in two statements and no transaction: read the
    contact, render, then write contact, email and the usage count together if the contact is still as read. None,
    with nothing written, when it is not, or where the database has no such guarded write (`contacts.upsert`)."""
    pending = contact_upsert_read(
        project=project, email=recipient.email, data=_recipient_data(data, recipient), new_subscribed=False
    )
    if pending is None:
        return None
    contact = pending.contact
    email = _email_row(
        project=project,
        content=content,
        domain_name=domain_name,
        to=Address(email=contact.email, name=recipient.name),
        contact=contact,
        variables={**contact.data, **pending.variables},
        bundle=None,
        now=timezone.now(),
        email_id=email_id,
    )
    if store_opted_out:
        _opted_out(email, contact, content)
    counted = [usage.counter_statement(allowance, 1, after="result")] if allowance else []
    if not contact_upsert_write(pending, dependent=[email], also=counted):
        return None
    if allowance:
        usage.usage_warn(allowance, 1, now=email.created_at)
    return Queued(contact=contact, email=email)


def emails_queue(
    *,
    project: Project,
    recipients: list[Address],
    content: SendContent,
    subscribed: bool | None = None,
    data: dict | None = None,
    email_id: uuid.UUID | None = None,
    store_opted_out: bool = False,
) -> list[Queued]:
    """Queue one email per recipient, in order; returns each recipient's contact and email row. Atomic: a request
    that fails writes nothing.

    Over the monthly cap of the source's billing category, nothing is written and 429 `BILLING_LIMIT_EXCEEDED` is
    raised; except for a workflow's email, which is stored FAILED `Billing limit exceeded` (not queued, not
    counted) so that the execution can go on and show why.

    A workflow step passes `email_id` (one recipient: the row's id, its key against queueing twice) and
    `store_opted_out`: a marketing or headless email to an unsubscribed contact is then stored SUPPRESSED instead
    of refusing the request, and a suppressed address is left to delivery, which stores it SUPPRESSED."""
    domain = sender_domain_for(project=project, address=content.sender.email)
    if not store_opted_out:
        _check_opt_outs(project, recipients, content, subscribed)
        recipients_check_suppressed(project=project, recipients=recipients, email_type=content.type)
    allowance = _allowance(project, content.source)
    blocked = allowance is not None and allowance.exceeded_by(len(recipients))
    if blocked and content.source != Email.Source.WORKFLOW:
        allowance.check(len(recipients))
    if len(recipients) == 1 and not content.attachments and subscribed is None and not blocked:
        single = _queue_single(
            project=project,
            recipient=recipients[0],
            content=content,
            data=data,
            domain_name=domain.name,
            allowance=allowance,
            email_id=email_id,
            store_opted_out=store_opted_out,
        )
        if single is not None:
            if single.email.status == Email.Status.QUEUED:
                enqueue_delivery([single.email.id])
            return [single]
    # A savepoint only when a caller's transaction is open (none in a request: the send view is not atomic): a
    # refused recipient (a rendering limit, the size cap) then rolls back this send alone, not the caller's work.
    with transaction.atomic():
        bundle = _bundle(project, content.attachments)
        now = timezone.now()
        queued: list[Queued] = []
        for recipient in recipients:
            result = contact_upsert(
                project=project,
                email=recipient.email,
                subscribed=subscribed,
                data=_recipient_data(data, recipient),
                new_subscribed=False,
                source="send",
            )
            contact = result.contact
            email = _email_row(
                project=project,
                content=content,
                domain_name=domain.name,
                to=Address(email=contact.email, name=recipient.name),
                contact=contact,
                variables={**contact.data, **result.variables},
                bundle=bundle,
                now=now,
                email_id=email_id,
            )
            if blocked:
                email.status, email.last_error = Email.Status.FAILED, usage.BLOCKED_REASON
            elif store_opted_out:
                _opted_out(email, contact, content)
            queued.append(Queued(contact=contact, email=email))
        emails = [item.email for item in queued]
        insert_prepared(emails)
        if blocked:
            return queued
        if allowance is not None:
            usage.usage_add(allowance, len(emails))
            usage.usage_warn(allowance, len(emails), now=now)
        enqueue_delivery([email.id for email in emails if email.status == Email.Status.QUEUED])
    return queued


def _allowance(project: Project, source: str, now=None) -> usage.Allowance | None:
    """The cap and this month's usage of the source's category; None for a source that counts in none."""
    category = CATEGORY_OF_SOURCE.get(source)
    return usage.allowance_read(project=project, category=category, now=now or timezone.now()) if category else None


def emails_allowance_check(*, project: Project, source: str, count: int) -> None:
    """Refuse (429 `BILLING_LIMIT_EXCEEDED`) `count` more emails of `source` this month when they would pass the
    project's cap of its category: a campaign asks before it starts, with its audience."""
    allowance = _allowance(project, source)
    if allowance is not None:
        allowance.check(count)


def emails_queue_bulk(*, project: Project, contacts: list[tuple], content: SendContent) -> None:
    """Queue one email per contact of a campaign's batch, whose audience the campaign chose (each contact an
    (id, address) pair): all inserted in one statement, unrendered, and handed to delivery at `BULK_PRIORITY` after
    the commit. Delivery personalizes each as it sends it (`messaging.sending.personalize`), so a batch costs one
    insert and no rendering; the batch stores the campaign's content for delivery too (`DeferredContent`, keyed by
    the campaign's id). The contacts are not upserted (they exist) and nothing is checked per recipient. The
    emails inserted are counted in the campaigns category; its cap was checked when the campaign was sent
    (`emails_allowance_check`), so a started campaign is never cut short.

    A contact that already has an email of `content.campaign_id` is left out by the unique constraint on
    (campaign, contact): a batch run twice queues nothing twice. (Its id is still published; delivery's claim
    finds no such row.)"""
    if not contacts:
        return
    domain = sender_domain_for(project=project, address=content.sender.email)
    now = timezone.now()
    allowance = _allowance(project, content.source, now)
    prototype = Email(
        project=project,
        campaign_id=content.campaign_id,
        source=content.source,
        type=content.type,
        from_email=content.sender.email,
        from_name=content.sender.name,
        reply_to=content.reply_to,
        subject=content.subject[:998],
        rendered=False,
        created_at=now,
        updated_at=now,
    )
    ids = random_uuids(len(contacts))
    with transaction.atomic():
        _deferred_content_store(project, content, now)
        inserted = insert_varied(
            prototype,
            {
                "id": ids,
                "contact": [contact_id for contact_id, _ in contacts],
                "to_email": [address for _, address in contacts],
                "message_id": [f"<{email_id}@{domain.name}>" for email_id in ids],
            },
            ignore_conflicts=True,
        )
        if allowance is not None:
            usage.usage_add(allowance, inserted)
            usage.usage_warn(allowance, inserted, now=now)
    enqueue_bulk_delivery(ids)


def _deferred_content_store(project: Project, content: SendContent, now) -> None:
    """The subject and body delivery personalizes the unrendered emails of `content.campaign_id` from, written with
    each batch (one statement) so that what is queued always has its content; the same for every batch, since a
    campaign cannot be edited while it sends."""
    DeferredContent.objects.bulk_create(
        [
            DeferredContent(
                id=content.campaign_id, project=project, subject=content.subject, body=content.body, updated_at=now
            )
        ],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["subject", "body", "updated_at"],
    )


def emails_cancel(*, campaign_id: uuid.UUID) -> bool:
    """Cancel a campaign's emails that delivery has not claimed (QUEUED -> CANCELLED, in one statement: a row
    claimed meanwhile is SENDING and stays out). Returns whether any had been handed to delivery; when none had,
    the campaign's emails are removed, as if it had never been sent."""
    emails = Email.objects.filter(campaign_id=campaign_id)
    emails.filter(status=Email.Status.QUEUED).update(status=Email.Status.CANCELLED, updated_at=timezone.now())
    if emails.exclude(status=Email.Status.CANCELLED).exists():
        return True
    emails.delete()
    return False


def emails_queue_contacts(
    *,
    project: Project,
    contacts: list[Contact],
    content: SendContent,
    variables: list[dict],
    email_ids: list[uuid.UUID],
) -> list[Email]:
    """Queue one email per existing contact of a workflow's SEND_EMAIL steps, each rendered now with the caller's
    `variables` for it and keyed by the caller's `email_ids` (an id already stored is left out, so a step run twice
    queues nothing twice): all inserted in one statement and handed to delivery after the commit; returns the rows,
    in order. The contacts are not upserted (they exist) and nothing is refused: stored as `emails_queue` stores one
    with `store_opted_out` (over the monthly cap FAILED and not counted, to an unsubscribed contact with a marketing
    or headless template SUPPRESSED), and content that a contact's data pushes past a rendering limit FAILED with
    the reason."""
    if not contacts:
        return []
    domain = sender_domain_for(project=project, address=content.sender.email)
    now = timezone.now()
    allowance = _allowance(project, content.source, now)
    blocked = allowance is not None and allowance.exceeded_by(len(contacts))
    emails = []
    for index, contact in enumerate(contacts):
        email = _email_row(
            project=project,
            content=content,
            domain_name=domain.name,
            to=Address(email=contact.email),
            contact=contact,
            variables=variables[index],
            bundle=None,
            now=now,
            fail_refused=True,
            email_id=email_ids[index],
        )
        if blocked:
            email.status, email.last_error = Email.Status.FAILED, usage.BLOCKED_REASON
        else:
            _opted_out(email, contact, content)
        emails.append(email)
    with transaction.atomic():
        inserted = insert_prepared(emails, ignore_conflicts=True)
        if allowance is not None and not blocked:
            usage.usage_add(allowance, inserted)
            usage.usage_warn(allowance, inserted, now=now)
    enqueue_delivery([email.id for email in emails if email.status == Email.Status.QUEUED])
    return emails


def emails_send_request(*, project: Project, body: dict, raw: dict) -> list[Queued]:
    """POST /v1/send: resolve the request against its template (explicit fields win), then queue it.

    `body` holds the typed fields validated by the view's serializer; `raw` the request as sent, for the fields
    that take several shapes (`to`, `from`, `reply`), parsed here with exact field paths.
    """
    recipients = parse.parse_recipients(raw.get("to"))
    sender = parse.parse_sender(raw.get("from"))
    reply = parse.parse_reply(raw.get("reply"))
    headers = parse.parse_headers(body.get("headers"))
    attachments = parse.parse_attachments(body.get("attachments"))
    data = validate_data(body["data"]) if body.get("data") is not None else None
    template = None
    if body.get("template"):
        template = Template.objects.filter(project=project, id=body["template"]).first()
        if template is None:
            raise NotFound("Template", body["template"])
    subject = body.get("subject") or (template.subject if template else None)
    html = body.get("body") or (template.body if template else None)
    if not subject:
        raise ValidationFailed.field(
            "subject", "Required unless the template has a subject", "invalid_type", received="undefined"
        )
    if not html:
        raise ValidationFailed.field(
            "body", "Required unless a template is given", "invalid_type", received="undefined"
        )
    if sender is None and template is not None:
        sender = Address(email=template.from_email)
    if sender is None:
        raise ValidationFailed.field(
            "from", "Required unless the template has a sender", "invalid_type", received="undefined"
        )
    # From name precedence: from.name, the deprecated `name`, the template's, the project's.
    from_name = sender.name or body.get("name") or (template.from_name if template else "") or project.name
    content = SendContent(
        subject=subject,
        body=html,
        sender=Address(email=sender.email, name=from_name),
        reply_to=reply or (template.reply_to if template else ""),
        type=template.type if template else EmailType.TRANSACTIONAL,
        template=template,
        headers=headers,
        attachments=attachments,
    )
    return emails_queue(
        project=project, recipients=recipients, content=content, subscribed=body.get("subscribed"), data=data
    )


def email_send_test(*, project: Project, to: Address, content: SendContent, sample_data: dict | None = None) -> Email:
    """One test message (`source=test`) rendered with sample data; it creates no contact and records no event.
    The subject is prefixed `[TEST] `."""
    domain = sender_domain_for(project=project, address=content.sender.email)
    existing = Contact.objects.filter(project=project, email=normalize_email(to.email)).first()
    variables = {**(existing.data if existing else {}), **(sample_data or {})}
    content = replace(content, subject=f"[TEST] {content.subject}", source=Email.Source.TEST)
    email = _email_row(
        project=project,
        content=content,
        domain_name=domain.name,
        to=to,
        contact=None,
        variables=variables,
        bundle=_bundle(project, content.attachments),
        now=timezone.now(),
    )
    email.save(force_insert=True)
    enqueue_delivery([email.id])
    return email


def emails_retry(*, email_ids: list) -> int:
    """Queue FAILED or QUEUED emails again now, with a fresh attempt budget; returns how many (the admin's retry).

    The rows are locked and reset in one transaction, and their ids reach the workers as every queued email's do
    (`enqueue_delivery`, after the commit, in tasks of `DELIVERY_BATCH_SIZE`); a row published twice is claimed once.
    `updated_at` moves on too, so the sweeper gives the new tasks their time before it publishes the rows again."""
    with transaction.atomic():
        ids = list(
            Email.objects.select_for_update()
            .filter(id__in=email_ids, status__in=[Email.Status.FAILED, Email.Status.QUEUED])
            .values_list("id", flat=True)
        )
        Email.objects.filter(id__in=ids).update(
            status=Email.Status.QUEUED, next_attempt_at=None, attempts=0, updated_at=timezone.now()
        )
        enqueue_delivery(ids)
    return len(ids)


def emails_retry_failed(
    *, since, project: Project | None = None, batch_size: int = 500, dry_run: bool = False, on_batch=None
) -> int:
    """Queue again, through `emails_retry`, every FAILED email that failed since `since` (its `updated_at`, the
    failure time), of one project or all; returns how many (with `dry_run`, how many would be).

    Rows whose body retention has emptied (older than EMAIL_BODY_RETENTION_DAYS) are left alone: they can no longer
    be sent as they were. Rows failing again while this runs (a worker is fast) are not taken twice: only failures
    from before the start count. `on_batch(count)` is told after each batch (a command's progress)."""
    now = timezone.now()
    failed = Email.objects.filter(
        status=Email.Status.FAILED,
        updated_at__gte=since,
        updated_at__lt=now,
        created_at__gte=now - timedelta(days=settings.EMAIL_BODY_RETENTION_DAYS),
    )
    if project is not None:
        failed = failed.filter(project=project)
    if dry_run:
        return failed.count()

    def retry(ids: list) -> int:
        count = emails_retry(email_ids=ids)
        if on_batch is not None:
            on_batch(count)
        return count

    return in_batches(failed, retry, order_by=("updated_at", "id"), batch_size=batch_size)
