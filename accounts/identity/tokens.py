"""The tokens of the links the service mails to people: password reset, address verification, invitation.

Each is single use and expires (docs/accounts.md, "Tokens"):
- A reset token is Django's `PasswordResetTokenGenerator` token behind the user's id: it hashes the password and
  the last login, so it dies with the reset it makes (and with any login after it was sent).
- A verification token is a signed, timestamped (user id, address): it survives logins, and is refused once the
  address is verified or changed.
- An invitation token is a signed, timestamped invitation id: it is refused once the invitation is used or
  withdrawn (its row is gone).
"""

import uuid

from django.conf import settings
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core import signing
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from accounts.models import User
from core.errors import ErrorCode, ServiceError
from core.ids import uuid_or_none

_reset_tokens = PasswordResetTokenGenerator()
# Fixed strings, whatever the module is called: a changed salt voids every link already mailed.
_VERIFICATION_SALT = "accounts.tokens.verification"
_INVITATION_SALT = "accounts.tokens.invitation"


def invalid_token() -> ServiceError:
    return ServiceError("This link is invalid or has expired", code=ErrorCode.INVALID_TOKEN, status=400)


def reset_token_make(user: User) -> str:
    # base64url has no ".", so the first "." splits the user id from Django's token.
    return f"{urlsafe_base64_encode(force_bytes(user.pk))}.{_reset_tokens.make_token(user)}"


def reset_token_user(token: str) -> User:
    """The user a valid, unused reset token was made for; INVALID_TOKEN otherwise."""
    encoded, _, django_token = str(token).partition(".")
    try:
        user_id = uuid_or_none(force_str(urlsafe_base64_decode(encoded)))
    except (ValueError, UnicodeDecodeError):
        user_id = None
    user = User.objects.filter(pk=user_id, is_active=True).first() if user_id else None
    if user is None or not _reset_tokens.check_token(user, django_token):
        raise invalid_token()
    return user


def verification_token_make(user: User) -> str:
    return signing.dumps({"u": str(user.pk), "e": user.email}, salt=_VERIFICATION_SALT, compress=True)


def verification_token_user(token: str) -> User:
    """The user whose address a valid token verifies, while that address is still theirs and unverified."""
    values = _load(token, _VERIFICATION_SALT, settings.EMAIL_VERIFICATION_TIMEOUT)
    user_id = uuid_or_none(str(values.get("u")))
    user = User.objects.filter(pk=user_id, email=values.get("e")).first() if user_id else None
    if user is None or user.email_verified_at is not None:
        raise invalid_token()
    return user


def invitation_token_make(invitation_id: uuid.UUID) -> str:
    return signing.dumps({"i": str(invitation_id)}, salt=_INVITATION_SALT)


def invitation_token_id(token: str) -> uuid.UUID:
    """The invitation id a valid token names (whether the invitation still exists is the caller's to check)."""
    invitation_id = uuid_or_none(str(_load(token, _INVITATION_SALT, settings.INVITATION_TIMEOUT).get("i")))
    if invitation_id is None:
        raise invalid_token()
    return invitation_id


def _load(token: str, salt: str, max_age: int) -> dict:
    try:
        values = signing.loads(str(token), salt=salt, max_age=max_age)
    except signing.BadSignature:  # altered, or expired (SignatureExpired derives from it)
        raise invalid_token() from None
    if not isinstance(values, dict):
        raise invalid_token()
    return values
