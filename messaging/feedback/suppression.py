"""The suppression list: addresses of a project that no mail goes to after a hard bounce, a complaint, or an
operator's decision.

Checked when a marketing or headless send is accepted (a suppressed recipient refuses the request with 422), and for
every email when it is delivered: a claimed email to a suppressed address is stored SUPPRESSED with the reason and
never handed to the mail server. Transactional sends are not checked at acceptance: the answer would be the same,
and delivery does the check anyway (including for addresses suppressed while the email waited). Removing an address
only lets mail through again; it does not resubscribe the contact.
"""

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from accounts.models import Project
from contacts.services import normalize_email
from core.db import select_prepared
from core.errors import ValidationFailed
from messaging.models import Email, EmailType, Suppression
from messaging.vocabulary import Address

OPT_OUT_TYPES = (EmailType.MARKETING, EmailType.HEADLESS)
REASON_LABELS = {
    Suppression.Reason.BOUNCE: "after a hard bounce",
    Suppression.Reason.COMPLAINT: "after a spam complaint",
    Suppression.Reason.MANUAL: "by an operator",
}


def suppression_add(
    *, project: Project, email: str, reason: str, source_email: Email | None = None, detail: str = ""
) -> Suppression:
    """Suppress an address of `project`; an address already on the list keeps its first entry."""
    with transaction.atomic():
        suppression, _ = Suppression.objects.get_or_create(
            project=project,
            email=normalize_email(email),
            defaults={"reason": reason, "source_email": source_email, "detail": detail[:1000]},
        )
    return suppression


def suppression_remove(*, suppression: Suppression) -> None:
    """Let mail reach the address again. The contact stays unsubscribed: only the person can opt back in."""
    suppression.delete()


def suppression_message(suppression: Suppression) -> str:
    return f"{suppression.email} is suppressed {REASON_LABELS[suppression.reason]}"


def suppressions_for(*, project_id, emails: Iterable[str]) -> dict[str, Suppression]:
    """The suppressed addresses among `emails` (normalised), by address."""
    addresses = {normalize_email(email) for email in emails}
    if not addresses:
        return {}
    rows = select_prepared(
        Suppression, ("id", "project", "email", "reason"), project=project_id, email__in=sorted(addresses)
    )
    return {row.email: row for row in rows}


def recipients_check_suppressed(*, project: Project, recipients: list[Address], email_type: str) -> None:
    """Before a marketing or headless send is stored: a suppressed recipient rejects the whole request (422 on its
    `to` entry). Transactional mail passes; delivery holds what goes to a suppressed address."""
    if email_type not in OPT_OUT_TYPES:
        return
    found = suppressions_for(project_id=project.id, emails=[r.email for r in recipients])
    for index, recipient in enumerate(recipients):
        suppression = found.get(normalize_email(recipient.email))
        if suppression is not None:
            field_path = f"to.{index}" if len(recipients) > 1 else "to"
            raise ValidationFailed.field(
                field_path,
                f"{suppression_message(suppression)} and cannot receive {email_type.lower()} email",
                "custom",
            )


def emails_skip_suppressed(*, emails: list[Email]) -> list[Email]:
    """At delivery: claimed rows whose address was suppressed after they were queued become SUPPRESSED instead of
    being sent; return the rest. One query per project in the batch."""
    by_project: dict = {}
    for email in emails:
        by_project.setdefault(email.project_id, []).append(email.to_email)
    found = {
        (project_id, address): row
        for project_id, addresses in by_project.items()
        for address, row in suppressions_for(project_id=project_id, emails=addresses).items()
    }
    if not found:
        return emails
    deliverable = []
    now = timezone.now()
    for email in emails:
        suppression = found.get((email.project_id, normalize_email(email.to_email)))
        if suppression is None:
            deliverable.append(email)
            continue
        Email.objects.filter(pk=email.pk, created_at=email.created_at, status=Email.Status.SENDING).update(
            status=Email.Status.SUPPRESSED, last_error=suppression_message(suppression), updated_at=now
        )
    return deliverable
