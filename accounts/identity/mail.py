"""The service's own mail to people (address verification, password reset, invitation), rendered from the templates
under accounts/templates/accounts/email/ and sent from SYSTEM_EMAIL_FROM through Django's mail backend (EMAIL_URL),
not through a project's sending path: it belongs to no project and needs no verified sender domain.

Services ask for a message with `account_email_queue`; the message is built and sent by a task after the commit, so
a slow mail relay never holds a request, and the token in it is made when it is sent. A message lost with its task
is asked for again by the person (`request-verification`, `request-password-reset`).

Anyone can ask for these messages to any address, so what people ask for goes through `account_email_allowed`
first: a cooldown per address and kind, and a daily cap per address in all (docs/security.md). Operators' resends
from the admin are not limited.
"""

import hashlib
from enum import StrEnum
from urllib.parse import urlencode

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import timezone

from accounts.identity import tokens
from accounts.models import Invitation, User
from core.commit import after_commit
from core.ratelimit import counter_increment

DAY_SECONDS = 24 * 3600


class AccountEmail(StrEnum):
    VERIFY_EMAIL = "verify_email"
    RESET_PASSWORD = "reset_password"
    INVITATION = "invitation"


# The pages the links open, under DASHBOARD_URL: a dashboard's own, which post the token to the API, or, where
# DASHBOARD_URL is the service's address (its default), the service's (`accounts.pages`), which call the same services.
PAGES = {
    AccountEmail.VERIFY_EMAIL: "/verify-email",
    AccountEmail.RESET_PASSWORD: "/reset-password",
    AccountEmail.INVITATION: "/signup",
}


def account_email_queue(*, kind: AccountEmail, object_id) -> None:
    """Send `kind` about a user (or, for an invitation, an invitation) once the current transaction commits."""
    from accounts.identity.tasks import send_account_email_task

    after_commit(
        lambda: send_account_email_task.delay(str(kind), str(object_id)),
        what=f"queue the {kind} email (asked for again by the person)",
    )


def account_email_allowed(*, kind: AccountEmail, email: str) -> bool:
    """Whether one more `kind` email may go to `email` now, and if so it is counted. Refused within
    ACCOUNT_EMAIL_COOLDOWN_SECONDS of the last one of the same kind (0: no cooldown), and past ACCOUNT_EMAIL_DAILY_LIMIT
    of all kinds in the 24 hours from the first. The counts live in the shared cache, so every web process sees the
    same; they are per kind, so an invitation followed at once by the invitee's sign-up still gets its verification."""
    # Hashed: a cache key must not carry the address (nor its length limits and characters).
    address = hashlib.sha256(email.strip().lower().encode()).hexdigest()
    cooldown = settings.ACCOUNT_EMAIL_COOLDOWN_SECONDS
    if cooldown > 0 and counter_increment(f"account-email:{kind}:{address}", timeout=cooldown) > 1:
        return False
    return counter_increment(f"account-email:day:{address}", timeout=DAY_SECONDS) <= settings.ACCOUNT_EMAIL_DAILY_LIMIT


def _duration(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if (seconds >= size and seconds % size == 0) or unit == "minute":
            count = max(1, seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


def _link(kind: AccountEmail, **query) -> str:
    return f"{settings.DASHBOARD_URL}{PAGES[kind]}?{urlencode(query)}"


def _context(kind: AccountEmail, object_id: str) -> tuple[str, dict] | None:
    """(recipient, template context), or None when what the message is about is gone (nothing to send)."""
    if kind is AccountEmail.INVITATION:
        invitation = Invitation.objects.select_related("project", "invited_by").filter(pk=object_id).first()
        if invitation is None:
            return None
        link = _link(kind, token=tokens.invitation_token_make(invitation.id), email=invitation.email)
        return invitation.email, {
            "link": link,
            "project": invitation.project.name,
            "role": invitation.role,
            "inviter": invitation.invited_by.email if invitation.invited_by else "A project owner",
            "valid_for": _duration(settings.INVITATION_TIMEOUT),
        }
    user = User.objects.filter(pk=object_id, is_active=True).first()
    if user is None:
        return None
    if kind is AccountEmail.VERIFY_EMAIL:
        if user.email_verified_at is not None:
            return None
        token, valid_for = tokens.verification_token_make(user), settings.EMAIL_VERIFICATION_TIMEOUT
    else:
        token, valid_for = tokens.reset_token_make(user), settings.PASSWORD_RESET_TIMEOUT
    return user.email, {"link": _link(kind, token=token), "email": user.email, "valid_for": _duration(valid_for)}


def account_email_send(*, kind: str, object_id: str) -> bool:
    """Render and send one account email; False when there was nothing to send."""
    kind = AccountEmail(kind)
    made_at = timezone.now()  # the date of the link `_context` makes (its token counts whole seconds)
    found = _context(kind, object_id)
    if found is None:
        return False
    recipient, context = found
    prefix = f"accounts/email/{kind}"
    message = EmailMultiAlternatives(
        subject=render_to_string(f"{prefix}_subject.txt", context).strip(),
        body=render_to_string(f"{prefix}.txt", context),
        from_email=settings.SYSTEM_EMAIL_FROM,
        to=[recipient],
    )
    message.attach_alternative(render_to_string(f"{prefix}.html", context), "text/html")
    message.send()
    if kind is AccountEmail.INVITATION:
        # Its newest link is this one: the invitation is pending as long as the link works.
        Invitation.objects.filter(pk=object_id).update(sent_at=made_at)
    return True
