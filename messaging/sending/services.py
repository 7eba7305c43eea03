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
from datetime import datetime, timedelta
from enum import StrEnum

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.billing import usage
from accounts.billing.models import Category
from accounts.models import Project
from contacts.models import Contact
from contacts.services import normalize_email
from contacts.upsert import contact_upsert, contact_upsert_guarded, contact_upsert_read
from core.batches import in_batches
from core.db import insert_prepared, insert_varied, new_instance
from core.errors import ValidationFailed
from core.ids import uuid7_of, uuid7_time, uuid7s
from domains.services import sender_domain_for
from messaging.feedback.suppression import recipients_check_suppressed
from messaging.models import ALL_TIME, CREATED_MARGIN, AttachmentBundle, DeferredContent, Email, EmailType, Template
from messaging.sending.dispatch import enqueue_bulk_delivery, enqueue_delivery
from messaging.sending.mime import Attachment
from messaging.sending.personalize import Personal, not_rendered, personalize
from messaging.vocabulary import Address

logger = logging.getLogger(__name__)
OPT_OUT_TYPES = (EmailType.MARKETING, EmailType.HEADLESS)
# Why mail was not sent because of the monthly cap: a workflow's FAILED email, the unsent part of a campaign.
BLOCKED_REASON = usage.BLOCKED_REASON
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
    # When the campaign started sending (its `sent_at`): all its emails were created since, so the fan-out's check
    # for a contact's email of the campaign reads only the months from then on.
    campaign_since: datetime | None = None
    workflow_id: uuid.UUID | None = None
    # The plain-text alternative as the sender wrote it (a message submitted over SMTP), rendered like the subject;
    # None: delivery makes it from the HTML body. With an empty body, the message is text only.
    text: str | None = None


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
    about: Contact | None = None,
) -> Email:
    """One recipient's email row, personalized; content that this recipient's data pushes past a rendering limit
    or the size cap is refused (422), or with `fail_refused` gives a FAILED row saying why (a batch goes on without
    that recipient's mail). `email_id` is the caller's key for the row (a workflow step's), so that running the
    same send twice cannot store two: a UUIDv7 key gives the row its time as `created_at`, so the two would share
    the primary key of the partitioned table, (id, created_at). Otherwise the id is made of `now`, the row's
    `created_at` (`messaging.models.created_window`)."""
    created_at = (email_id and uuid7_time(email_id)) or now
    email_id = email_id or uuid7_of(now)
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
            text=content.text,
            about=about,
        )
    except ValidationFailed as refused:
        if not fail_refused:
            raise
        personal, failure = Personal(subject=content.subject[:998], html=""), not_rendered(refused)
    email = new_instance(
        Email,
        id=email_id,
        project_id=project.id,
        contact_id=contact.id if contact else None,
        to_email=to.email,
        to_name=to.name,
        template_id=content.template.id if content.template else None,
        campaign_id=content.campaign_id,
        workflow_id=content.workflow_id,
        source=content.source,
        type=content.type,
        from_email=content.sender.email,
        from_name=content.sender.name,
        reply_to=content.reply_to,
        subject=personal.subject,
        html=personal.html,
        text=personal.text,
        headers=content.headers,
        attachments_id=bundle.id if bundle else None,
        message_id=f"<{email_id}@{domain_name}>",
        created_at=created_at,
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
    policy: "Policy",
    about: Contact | None,
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
        fail_refused=not policy.refuse,
        email_id=email_id,
        about=about,
    )
    if not policy.refuse:
        _opted_out(email, contact, content)
    # The store step of one recipient, in one statement guarded by the contact's write: the email row and its usage
    # count apply only if the contact is still as read.
    write = contact_upsert_guarded(pending)
    write.insert([email])
    if allowance:
        write.then(*usage.counter_statement(allowance, 1, after=write.guard))
    if not write.run():
        return None
    if allowance:
        usage.usage_warn(allowance, 1, now=email.created_at)
    if email.status == Email.Status.QUEUED:
        enqueue_delivery([email.id])
    return Queued(contact=contact, email=email)


class Contacts(StrEnum):
    """Who the recipients of a send are."""

    UPSERT = "upsert"  # addresses, each upserted as a contact through the contacts app's data rules
    EXISTING = "existing"  # the project's contacts, given (`Recipient`): nothing upserted
    NONE = "none"  # addresses that become no contact (a test send)


class OnCap(StrEnum):
    """What a send past the monthly cap of its billing category does."""

    REFUSE = "refuse"  # 429 BILLING_LIMIT_EXCEEDED, nothing stored
    # The recipients within the cap are queued; each one past it is stored FAILED `Billing limit exceeded`, neither
    # queued nor counted, and the caller goes on.
    FAIL = "fail"
    COUNT = "count"  # stored and counted: the caller took its room first (a campaign's batch, `emails_allowance_hold`)


@dataclass(frozen=True)
class Policy:
    """What differs between the ways into the send path; everything else (the sender's verified domain, the rows,
    the usage count, the handover to delivery) is the same for all."""

    contacts: Contacts = Contacts.UPSERT
    # Refusals (an opted-out contact, a suppressed address, content a recipient's data pushes past a rendering limit)
    # refuse the whole send (the API); else they are stored, SUPPRESSED or FAILED, and the caller goes on.
    refuse: bool = True
    on_cap: OnCap = OnCap.REFUSE
    # Stored unrendered, and personalized by delivery as it sends (`DeferredContent`): a campaign's batch.
    render_at_delivery: bool = False
    # Handed to delivery at BULK_PRIORITY, after the transactional mail waiting (`messaging.sending.dispatch`).
    bulk: bool = False


# The ways in (docs/messaging.md, "One send path").
SEND = Policy()
WORKFLOW = Policy(contacts=Contacts.EXISTING, refuse=False, on_cap=OnCap.FAIL)
WORKFLOW_ADDRESS = Policy(refuse=False, on_cap=OnCap.FAIL)
CAMPAIGN = Policy(contacts=Contacts.EXISTING, refuse=False, on_cap=OnCap.COUNT, render_at_delivery=True, bulk=True)
TEST = Policy(contacts=Contacts.NONE)


@dataclass(slots=True)  # not frozen: a campaign's batch makes a thousand, and frozen ones cost three times as much
class Recipient:
    """An existing contact as a recipient: the contact (or, for a row rendered at delivery, its id and address),
    the variables its copy is rendered with, and the caller's key for its email row (a workflow step's id: a step
    run twice stores one row)."""

    email: str
    contact: Contact | None = None
    contact_id: uuid.UUID | None = None
    variables: dict | None = None
    email_id: uuid.UUID | None = None


def emails_queue(
    *,
    project: Project,
    content: SendContent,
    recipients: list[Address] | list[Recipient],
    policy: Policy = SEND,
    subscribed: bool | None = None,
    data: dict | None = None,
    email_id: uuid.UUID | None = None,
    about: Contact | None = None,
) -> list[Queued]:
    """The one way into the send path: queue one email per recipient, in order, as `policy` says; returns each
    recipient's contact and email row (none for rows rendered at delivery). Atomic: a send that is refused writes
    nothing.

    `recipients` are `Address`es (upserted as contacts, or none for a test) or `Recipient`s (existing contacts).
    With upserted contacts, `data` and `subscribed` apply to each, and `email_id` keys the row of a single
    recipient; `about`, a contact the email is about that is not its recipient (a workflow's mail to a CUSTOM
    address), gives the template its `id`, `email` and `subscribed`. An email that delivery would not send is stored as it stands (FAILED or SUPPRESSED, with why) and
    not handed over."""
    if not recipients:
        return []
    domain = sender_domain_for(project=project, address=content.sender.email)
    now = timezone.now()
    allowance = _allowance(project, content.source, now)
    # How many recipients, in order, the cap leaves room for; with `FAIL`, the rest get a FAILED email each.
    fits = len(recipients) if allowance is None or policy.on_cap == OnCap.COUNT else allowance.room(len(recipients))
    blocked = fits < len(recipients)
    if blocked and policy.on_cap == OnCap.REFUSE:
        allowance.check(len(recipients))
    if policy.contacts == Contacts.UPSERT:
        if policy.refuse:
            _check_opt_outs(project, recipients, content, subscribed)
            recipients_check_suppressed(project=project, recipients=recipients, email_type=content.type)
        if len(recipients) == 1 and not content.attachments and subscribed is None and not blocked:
            single = _queue_single(
                project=project,
                recipient=recipients[0],
                content=content,
                data=data,
                domain_name=domain.name,
                allowance=allowance,
                email_id=email_id,
                policy=policy,
                about=about,
            )
            if single is not None:
                return [single]
    if policy.render_at_delivery:
        _queue_unrendered(project, content, recipients, domain.name, allowance, now)
        return []
    # A savepoint only when a caller's transaction is open (none in a request: the send view is not atomic): a
    # refused recipient (a rendering limit, the size cap) then rolls back this send alone, not the caller's work.
    with transaction.atomic():
        bundle = _bundle(project, content.attachments)
        queued = [
            _queued(project, content, recipient, policy, domain.name, bundle, now, subscribed, data, email_id, about)
            for recipient in recipients
        ]
        for item in queued[fits:]:
            item.email.status, item.email.last_error = Email.Status.FAILED, BLOCKED_REASON
        emails = [item.email for item in queued]
        # Inserted apart, so that only the rows within the cap are counted (a row already stored is left out).
        ignore_conflicts = policy.contacts == Contacts.EXISTING
        inserted = insert_prepared(emails[:fits], ignore_conflicts=ignore_conflicts)
        insert_prepared(emails[fits:], ignore_conflicts=ignore_conflicts)
        deliver = [email.id for email in emails if email.status == Email.Status.QUEUED]
        _store(allowance, inserted, deliver, now, bulk=policy.bulk)
    return queued


def _queued(
    project: Project,
    content: SendContent,
    recipient,
    policy: Policy,
    domain_name: str,
    bundle: AttachmentBundle | None,
    now,
    subscribed: bool | None,
    data: dict | None,
    email_id: uuid.UUID | None,
    about: Contact | None,
) -> Queued:
    """One recipient's row, rendered now, with its contact upserted, given or none, as the policy says."""
    if policy.contacts == Contacts.EXISTING:
        contact, to, variables = recipient.contact, Address(email=recipient.email), recipient.variables
        email_id = recipient.email_id
    elif policy.contacts == Contacts.NONE:
        existing = Contact.objects.filter(project=project, email=normalize_email(recipient.email)).first()
        contact, to, variables = None, recipient, {**(existing.data if existing else {}), **(data or {})}
    else:
        result = contact_upsert(
            project=project,
            email=recipient.email,
            subscribed=subscribed,
            data=_recipient_data(data, recipient),
            new_subscribed=False,
            source="send",
        )
        contact, to = result.contact, Address(email=result.contact.email, name=recipient.name)
        variables = {**contact.data, **result.variables}
    email = _email_row(
        project=project,
        content=content,
        domain_name=domain_name,
        to=to,
        contact=contact,
        variables=variables,
        bundle=bundle,
        now=now,
        fail_refused=not policy.refuse,
        email_id=email_id,
        about=about,
    )
    if not policy.refuse:
        _opted_out(email, contact, content)
    return Queued(contact=contact, email=email)


def _queue_unrendered(
    project: Project,
    content: SendContent,
    recipients: list[Recipient],
    domain_name: str,
    allowance: usage.Allowance | None,
    now,
) -> None:
    """A campaign's batch: one insert of unrendered rows that differ only in id, contact and address, with the
    content delivery personalizes them from (`DeferredContent`, keyed by the campaign's id).

    A contact that already has an email of the campaign is left out, so a batch run twice (a redelivered or resumed
    fan-out) or two at once queue nothing twice. No unique index can say so (a partitioned table's must hold
    `created_at`): the content's upsert comes first and holds its row, the campaign's, until the batch commits, so
    the batches of one campaign run one after the other, and each reads the emails its predecessors committed."""
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
    with transaction.atomic():
        _deferred_content_store(project, content, now)
        recipients = _without_email_of_campaign(content, recipients)
        ids = uuid7s(len(recipients), moment=now)
        inserted = insert_varied(
            prototype,
            {
                "id": ids,
                "contact": [recipient.contact_id for recipient in recipients],
                "to_email": [recipient.email for recipient in recipients],
                "message_id": [f"<{email_id}@{domain_name}>" for email_id in ids],
            },
        )
        _store(allowance, inserted, ids, now, bulk=True)


# A campaign's emails among some contacts, one probe of the (campaign, contact) index per contact: a LATERAL
# subquery with LIMIT 1 leaves the planner no other way in. Asked for all of them at once, it trusted the statistics
# of a campaign just started (no rows), read its rows by campaign alone and filtered the contacts, so each batch
# read every email the campaign's earlier batches made (a fan-out to 900,000 took minutes, and longer per batch).
_PG_CAMPAIGN_CONTACTS = """
SELECT wanted.contact FROM unnest(%s::uuid[]) AS wanted(contact) CROSS JOIN LATERAL (
    SELECT 1 FROM messaging_email
    WHERE campaign_id = %s AND contact_id = wanted.contact AND created_at >= %s
    LIMIT 1
) AS found
"""


def _without_email_of_campaign(content: SendContent, recipients: list[Recipient]) -> list[Recipient]:
    """`recipients` but those who have an email of the campaign already (read along the (campaign, contact) index,
    in the months since the campaign started)."""
    contact_ids = [recipient.contact_id for recipient in recipients]
    since = content.campaign_since - CREATED_MARGIN if content.campaign_since else ALL_TIME[0]
    if connection.vendor == "postgresql":
        array = "{" + ",".join(str(contact_id) for contact_id in contact_ids) + "}"
        with connection.cursor() as cursor:
            cursor.execute(_PG_CAMPAIGN_CONTACTS, [array, content.campaign_id, since])
            have = {row[0] for row in cursor.fetchall()}
    else:
        existing = Email.objects.filter(
            campaign_id=content.campaign_id, contact_id__in=contact_ids, created_at__gte=since
        )
        have = set(existing.values_list("contact_id", flat=True))
    return [recipient for recipient in recipients if recipient.contact_id not in have] if have else recipients


def _store(allowance: usage.Allowance | None, inserted: int, deliver: list, now, *, bulk: bool) -> None:
    """The step every way in ends with, inside the transaction that inserted `inserted` rows: count them in the
    month's usage of their category (none without an allowance) and hand the ids in `deliver` to delivery once
    committed."""
    if allowance is not None and inserted:
        usage.usage_add(allowance, inserted)
        usage.usage_warn(allowance, inserted, now=now)
    (enqueue_bulk_delivery if bulk else enqueue_delivery)(deliver)


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


def emails_allowance_hold(*, project: Project, source: str, count: int) -> int:
    """How many of `count` more emails of `source` fit this month under the project's cap of its category (all of
    them without a cap), read with the category's counter locked until the caller's transaction ends
    (`usage.allowance_hold`): a campaign's fan-out batch queues that many with the `CAMPAIGN` policy in the same
    transaction, and the next batch of any of the project's campaigns reads usage with them counted."""
    category = CATEGORY_OF_SOURCE.get(source)
    if category is None:
        return count
    return usage.allowance_hold(project=project, category=category, now=timezone.now()).room(count)


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


def email_send_test(*, project: Project, to: Address, content: SendContent, sample_data: dict | None = None) -> Email:
    """One test message (`source=test`) rendered with sample data over the address's contact data, if it has any;
    it creates no contact, records no event and counts in no category. The subject is prefixed `[TEST] `."""
    content = replace(content, subject=f"[TEST] {content.subject}", source=Email.Source.TEST)
    [queued] = emails_queue(project=project, content=content, recipients=[to], policy=TEST, data=sample_data)
    return queued.email


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
