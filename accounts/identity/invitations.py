"""Invitations (docs/accounts.md, "Members and invitations"): an address with no verified account, invited to a
project by its owner or an admin, gets an email with a link; it joins the project when it signs up or accepts with
the link's token or, for an invitation it did not follow, when it proves the address another way.

An invitation is pending until its latest link expires (`Invitation.expires_at`); accepted or withdrawn, its row is
deleted, and its links stop working with it.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.identity import tokens
from accounts.identity.mail import DAY_SECONDS, AccountEmail, account_email_allowed, account_email_queue
from accounts.models import Invitation, Membership, Project, User
from core.db import locked
from core.errors import Conflict, ErrorCode, NotFound, RateLimited, ServiceError
from core.ids import uuid_or_none
from core.ratelimit import counter_increment


def _sent_after() -> datetime:
    """An invitation whose latest link was sent after this is pending; one sent before, expired."""
    return timezone.now() - timedelta(seconds=settings.INVITATION_TIMEOUT)


def _pending(invitations: QuerySet) -> QuerySet:
    return invitations.filter(sent_at__gt=_sent_after())


@transaction.atomic
def invitation_create(*, project: Project, email: str, role: str, invited_by: User) -> Invitation:
    """Invite `email` (normalized) to `project` with `role`, and send the invitation after the commit.

    An expired invitation of the address to the project is replaced; a pending one is 409. A project sends at most
    INVITATION_DAILY_LIMIT_PER_PROJECT invitations in 24 hours, and an address gets them within the account emails'
    limits (`mail.account_email_allowed`); past either, 429 and nothing is kept. Counted once the invitation is known
    not to be a duplicate (409), which counts nothing."""
    Invitation.objects.filter(project=project, email=email, sent_at__lte=_sent_after()).delete()
    try:
        with transaction.atomic():
            invitation = Invitation.objects.create(project=project, email=email, role=role, invited_by=invited_by)
    except IntegrityError:
        raise Conflict(f"{email} is already invited to this project", details={"field": "email"}) from None
    limit = settings.INVITATION_DAILY_LIMIT_PER_PROJECT
    if counter_increment(f"invitations:{project.pk}", timeout=DAY_SECONDS) > limit:
        raise RateLimited(
            f"This project has sent its {limit} invitations for the day. Try again tomorrow", details={"limit": limit}
        )
    if not account_email_allowed(kind=AccountEmail.INVITATION, email=email):
        raise RateLimited(f"{email} has been sent too many emails lately. Try again later", details={"field": "email"})
    account_email_queue(kind=AccountEmail.INVITATION, object_id=invitation.pk)
    return invitation


def invitations_pending(*, project: Project) -> list[Invitation]:
    """The project's invitations that are neither accepted, withdrawn nor expired, oldest first."""
    return list(_pending(Invitation.objects.filter(project=project)).order_by("created_at", "id"))


def invitation_withdraw(*, project: Project, invitation_id) -> None:
    """Withdraw one of the project's invitations (NotFound for any other id): its links stop working, and proving
    the address no longer joins the project."""
    deleted, _ = Invitation.objects.filter(project=project, pk=uuid_or_none(invitation_id)).delete()
    if not deleted:
        raise NotFound("Invitation", invitation_id)


def _invitation_gone() -> ServiceError:
    return ServiceError(
        "This invitation has been withdrawn or already accepted", code=ErrorCode.INVALID_TOKEN, status=400
    )


def _of_token(token: str, *, lock: bool) -> Invitation:
    invitations = Invitation.objects.select_related("project").filter(pk=tokens.invitation_token_id(token))
    found = locked(invitations) if lock else list(invitations)
    if not found:
        raise _invitation_gone()
    return found[0]


def invitation_get(*, token: str) -> Invitation:
    """The invitation a link's token names, with its project: 400 INVALID_TOKEN for a token altered or past its
    time, and for an invitation withdrawn or accepted since."""
    return _of_token(token, lock=False)


def _join(user: User, invitation: Invitation) -> None:
    Membership.objects.get_or_create(user=user, project_id=invitation.project_id, defaults={"role": invitation.role})
    invitation.delete()


@transaction.atomic
def invitation_accept(*, user: User, token: str) -> Project:
    """Join the project of an invitation. The token was mailed to the invited address, so holding it proves that
    address: a user who is that address has it verified (and joins its other invitations too); a user logged in
    under another address joins as themselves."""
    invitation = _of_token(token, lock=True)
    project = invitation.project
    _join(user, invitation)
    if user.email == invitation.email and user.email_verified_at is None:
        address_proven(user=user)
    return project


def address_proven(*, user: User) -> None:
    """The user's address is theirs (a link mailed to it came back): verified, and every project whose invitation
    of it is pending is joined. The only way an invitation turns into a membership without its token."""
    user.email_verified_at = timezone.now()
    user.save(update_fields=["email_verified_at"])
    invitations_accept_for(user=user)


def invitations_accept_for(*, user: User) -> int:
    """Join every project whose invitation of this (verified) address is pending."""
    invitations = list(_pending(Invitation.objects.filter(email=user.email)))
    for invitation in invitations:
        _join(user, invitation)
    return len(invitations)
