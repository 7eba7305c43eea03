"""People: sign-up, the password check of a login (with its lockout), address verification and password resets.

The HTTP side (logging the session in and out) is the views'; these functions decide (docs/accounts.md).
"""

import hashlib

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.identity import tokens
from accounts.identity.invitations import address_proven, invitation_accept, invitation_get
from accounts.identity.mail import AccountEmail, account_email_allowed, account_email_queue
from accounts.models import User
from core.errors import AuthError, Conflict, ErrorCode, Forbidden, RateLimited, ValidationFailed
from core.ratelimit import counter_increment

INVALID_CREDENTIALS = "Invalid email or password"


def _normalized(email: str) -> str:
    return email.strip().lower()


def _validated_password(password: str, user: User | None = None) -> str:
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise ValidationFailed(
            [{"field": "password", "message": message, "code": "custom"} for message in exc.messages]
        ) from None
    return password


def user_get_or_create(*, email: str, password: str | None = None, verified: bool = False) -> tuple[User, bool]:
    """The account of `email`, made if there is none. `verified`: whoever makes it vouches that the address is the
    person's (a new account only; an existing one is returned as it is)."""
    email = email.strip().lower()
    user = User.objects.filter(email=email).first()
    if user is not None:
        return user, False
    user = User(email=email, email_verified_at=timezone.now() if verified else None)
    user.set_password(password) if password else user.set_unusable_password()
    user.full_clean()
    user.save()
    return user, True


def user_signup(*, email: str, password: str, invitation_token: str | None = None) -> User:
    """Create an account and ask its owner to verify the address.

    With the token of an invitation sent to this address, the address is proven (the mail reached it): it counts as
    verified and the project of the invitation is joined at once. Without one, invitations to the address are
    joined when it is verified. With SIGNUPS_DISABLED, only such an invited address may sign up.
    """
    email = _normalized(email)
    if settings.SIGNUPS_DISABLED and not (invitation_token and invitation_get(token=invitation_token).email == email):
        raise Forbidden("Sign-ups are by invitation only on this installation", code=ErrorCode.SIGNUPS_DISABLED)
    user = User(email=email)
    _validated_password(password, user)
    if User.objects.filter(email=email).exists():
        raise Conflict("An account with this email already exists", details={"field": "email"})
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:  # signed up twice at once
        raise Conflict("An account with this email already exists", details={"field": "email"}) from None
    if invitation_token:
        invitation_accept(user=user, token=invitation_token)
    # Past the address's limit the account is made all the same; its owner asks for the link again later.
    if user.email_verified_at is None and account_email_allowed(kind=AccountEmail.VERIFY_EMAIL, email=email):
        account_email_queue(kind=AccountEmail.VERIFY_EMAIL, object_id=user.pk)
    return user


def user_exists(*, email: str) -> bool:
    """Whether `email` has an account (an invitation's page offers it a sign-in rather than a sign-up)."""
    return User.objects.filter(email=_normalized(email)).exists()


def _failures_key(email: str) -> str:
    # Hashed: the cache key must not carry the address (nor its length limits and characters).
    return "login-failures:" + hashlib.sha256(email.encode()).hexdigest()


def _locked_out() -> RateLimited:
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    return RateLimited(
        f"Too many failed logins for this address. Try again in {window // 60} minutes",
        details={"retryAfter": window},
        headers={"Retry-After": str(window)},
    )


def user_authenticate(*, email: str, password: str) -> User:
    """The user these credentials belong to.

    1. The attempt is counted first, in one atomic increment, and an address past LOGIN_FAILURE_LIMIT attempts in
       the window is refused (429) before its password is looked at, the right one included. Counting after the
       check would let parallel guesses all read the count below the limit while their hashes run; counted first,
       at most the limit's worth are ever checked. The count is per address, so other addresses from the same
       client go on; a successful login forgets it (`user_login_recorded`).
    2. An unknown address runs the password hasher too, so that it takes as long as a wrong password, and both
       are the same 401.
    """
    email = _normalized(email)
    attempts = counter_increment(_failures_key(email), timeout=settings.LOGIN_FAILURE_WINDOW_SECONDS)
    if attempts > settings.LOGIN_FAILURE_LIMIT:
        raise _locked_out()
    user = User.objects.filter(email=email).first()
    if user is None:
        User().set_password(password)
    elif user.check_password(password) and user.is_active:
        return user
    raise AuthError(INVALID_CREDENTIALS, code=ErrorCode.INVALID_CREDENTIALS)


def user_login_recorded(*, user: User) -> None:
    """After a successful login: the address's failures are forgotten."""
    caches["default"].delete(_failures_key(user.email))


@transaction.atomic
def user_verify_email(*, token: str) -> User:
    user = tokens.verification_token_user(token)
    address_proven(user=user)
    return user


def user_request_verification(*, email: str) -> None:
    """Send a new verification link to an unverified account; silent otherwise (no account enumeration), and silent
    past the address's limit too (an answer that differed would tell that the address has an account)."""
    user = User.objects.filter(email=_normalized(email), is_active=True, email_verified_at__isnull=True).first()
    if user is not None and account_email_allowed(kind=AccountEmail.VERIFY_EMAIL, email=user.email):
        account_email_queue(kind=AccountEmail.VERIFY_EMAIL, object_id=user.pk)


def user_request_password_reset(*, email: str) -> None:
    """Send a reset link to an account; silent for an unknown address (no account enumeration) and past the
    address's limit."""
    user = User.objects.filter(email=_normalized(email), is_active=True).first()
    if user is not None and account_email_allowed(kind=AccountEmail.RESET_PASSWORD, email=user.email):
        account_email_queue(kind=AccountEmail.RESET_PASSWORD, object_id=user.pk)


@transaction.atomic
def user_reset_password(*, token: str, password: str) -> User:
    """Set a new password. Every session of the user ends: a session is bound to the password hash it was opened
    with (Django's session auth hash), so none survives the change. The mail reached the address: it is verified."""
    user = tokens.reset_token_user(token)
    user.set_password(_validated_password(password, user))
    user.save(update_fields=["password"])
    if user.email_verified_at is None:
        address_proven(user=user)
    return user


@transaction.atomic
def user_from_provider(*, email: str, verified: bool, provider: str) -> User:
    """The account a sign-in through an OAuth provider opens, by the address the provider vouches for.

    1. An address the provider has not verified is refused: anyone can type an address into a provider's profile,
       and it must neither open an account that is somebody else's nor create one.
    2. A known address is that account. If the account had not verified its address, whoever chose its password
       never proved the address was theirs (someone may have signed up with it first): the password is dropped,
       which ends that person's sessions too, and the owner sets one through a password reset if they want one.
    3. An unknown address is a new account (unless sign-ups are off), with no password, its address verified.
    Either way the address counts as verified from here on, which joins the projects it was invited to.
    """
    if not verified:
        raise Forbidden(
            f"{provider} has not verified this account's email address. Verify it there, then sign in again",
            code=ErrorCode.OAUTH_EMAIL_UNVERIFIED,
        )
    email = _normalized(email)
    try:
        validate_email(email)
    except ValidationError:
        raise Forbidden(f"{provider} gave no usable email address", code=ErrorCode.OAUTH_EMAIL_UNVERIFIED) from None
    user = User.objects.select_for_update().filter(email=email).first()
    if user is None:
        if settings.SIGNUPS_DISABLED:
            raise Forbidden("Sign-ups are disabled on this installation", code=ErrorCode.SIGNUPS_DISABLED)
        user = User(email=email)
        user.set_unusable_password()
        try:
            with transaction.atomic():
                user.save()
        except IntegrityError:  # the same person's two callbacks at once
            user = User.objects.get(email=email)
    if not user.is_active:
        raise AuthError("This account is disabled", code=ErrorCode.INVALID_CREDENTIALS)
    if user.email_verified_at is None:
        if user.has_usable_password():
            user.set_unusable_password()
            user.save(update_fields=["password"])
        address_proven(user=user)
    return user
