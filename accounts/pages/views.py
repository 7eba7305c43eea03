"""The pages behind the links of the account emails: `/verify-email`, `/reset-password` and `/signup`.

The links go to DASHBOARD_URL, which is the service's own address unless a dashboard is served elsewhere; these
pages answer here either way, so that an installation without a dashboard of its own has them too (docs/pages.md).

- Plain server-rendered forms that work without JavaScript, each with Django's CSRF token: a sign-up or a sign-in
  here logs the browser in, as the API's does.
- A GET only shows: mail scanners and prefetching clients follow links, so a token is used only by the POST of the
  page's button.
- The pages decide nothing. Each calls the service its API endpoint calls (`accounts.identity.users`,
  `accounts.identity.invitations`) after the endpoint's input check (its input serializer), so the password rules,
  the token checks, the login lockout and the email limits are the API's, with its messages; and every request
  counts in the API's rate limit of its client address. A refusal is a page with the API's status and message.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import wraps

from django.conf import settings
from django.contrib.auth import password_validation
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods
from rest_framework import serializers

from accounts.api.serializers import CredentialsInputSerializer, ResetPasswordInputSerializer, SignupInputSerializer
from accounts.http.authentication import session_open
from accounts.http.ratelimit import address_scope
from accounts.identity import invitations, tokens, users
from accounts.models import Invitation, User
from core.errors import AuthError, Conflict, ErrorCode, RateLimited, ServiceError, ValidationFailed
from core.http.validation import validate
from core.ratelimit import rate_limit_hit

_TITLES = {
    ErrorCode.INVALID_TOKEN: "Link not valid",
    ErrorCode.RATE_LIMIT_EXCEEDED: "Too many requests",
    ErrorCode.SIGNUPS_DISABLED: "Sign-up is by invitation",
}


@dataclass(frozen=True)
class Field:
    """A text input of a form, with what the page says under it."""

    name: str
    label: str
    autocomplete: str
    type: str = "password"
    value: str = ""
    errors: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()

    @property
    def maxlength(self) -> int:
        return 254 if self.type == "email" else 128


def _new_password(label: str) -> list[Field]:
    # The rules of the validators (AUTH_PASSWORD_VALIDATORS), as the service applies them.
    hints = tuple(password_validation.password_validators_help_texts())
    return [
        Field("password", label, "new-password", hints=hints),
        Field("password2", f"{label}, once more", "new-password"),
    ]


def _message(request, title: str, text: str, *, status: int = 200, dashboard: bool = False) -> HttpResponse:
    """A page that only tells something; `dashboard`: with a link on to the dashboard, where there is one (a
    DASHBOARD_URL other than the service's own address)."""
    dashboard_url = settings.DASHBOARD_URL if dashboard and settings.DASHBOARD_URL != settings.PUBLIC_URL else None
    context = {"title": title, "text": text, "dashboard_url": dashboard_url}
    return render(request, "accounts/pages/message.html", context, status=status)


def _refused(request, exc: ServiceError, link_hint: str) -> HttpResponse:
    text = f"{exc.message}."
    if exc.code == ErrorCode.INVALID_TOKEN:
        text = f"{text} {link_hint}"
    response = _message(request, _TITLES.get(exc.code, "Not done"), text, status=exc.status)
    for name, value in exc.headers.items():
        response[name] = value
    return response


def _form(request, template: str, fields: list[Field], context: dict, failure: ServiceError | None = None):
    """A page with a form: the fields, and a refused submission's messages at their fields or, for the others
    (a wrong password, an address taken), above the form. The password fields are never filled in again."""
    names = {field.name for field in fields}
    at_field: dict[str, list[str]] = {}
    alerts = []
    for error in (failure.errors or [{"message": failure.message}]) if failure else []:
        if error.get("field") in names:
            at_field.setdefault(error["field"], []).append(error["message"])
        else:
            alerts.append(error["message"])
    shown = [
        replace(
            field,
            value=request.POST.get(field.name, "") if field.type != "password" else "",
            errors=tuple(at_field.get(field.name, ())),
        )
        for field in fields
    ]
    context = {**context, "fields": shown, "alerts": alerts}
    return render(request, template, context, status=failure.status if failure else 200)


def _form_page(
    request, name: str, fields: list[Field], context: dict, act: Callable[[], HttpResponse], *refusals: type
) -> HttpResponse:
    """The page of a form (template `accounts/pages/<name>.html`): the form on a GET; on a POST what `act()`
    answers, or the form again with its refusal when it raises ValidationFailed or one of `refusals` (a refusal of
    another kind is a page of its own, `_account_page`)."""
    template = f"accounts/pages/{name}.html"
    if request.method == "POST":
        try:
            return act()
        except (ValidationFailed, *refusals) as exc:
            return _form(request, template, fields, context, exc)
    return _form(request, template, fields, context)


def _submitted(request, serializer: type[serializers.Serializer], *, twice: bool, **values) -> dict:
    """The form's password (and `values`) as the API endpoint's input serializer checks them; `twice`: the password
    typed twice alike."""
    password = request.POST.get("password", "")
    checked = validate(serializer, {**values, "password": password})
    if twice and password != request.POST.get("password2", ""):
        raise ValidationFailed.field("password2", "The two passwords are not the same.")
    return checked


def _account_page(*, link_hint: str) -> Callable:
    """Around each page: no caching (a page holds a token), GET and POST only, the request counted in the API's
    rate limit of its client address (a 429 page past it), and a service's refusal the view does not show in its
    form turned into a page with the API's status and message (`link_hint` after a link's INVALID_TOKEN)."""

    def decorator(view):
        protected = csrf_protect(view)

        # The CSRF check runs here, after the method's (a wrong method is 405, not a CSRF refusal) and the rate
        # limit's, rather than in the middleware, before both.
        @csrf_exempt
        @never_cache
        @require_http_methods(["GET", "POST"])
        @wraps(view)
        def page(request):
            state = rate_limit_hit(address_scope(request.META))
            try:
                if state is not None and state.exceeded:
                    raise RateLimited(
                        f"Too many requests from your network. Try again in {state.reset} seconds",
                        headers={"Retry-After": str(state.reset)},
                    )
                return protected(request)
            except ServiceError as exc:
                return _refused(request, exc, link_hint)

        page.account_page = True  # its CSRF refusal is a page too (`csrf_refusal`)
        return page

    return decorator


def csrf_refusal(request) -> HttpResponse | None:
    """What a form of these pages gets when Django's CSRF check refuses it (CSRF_FAILURE_VIEW, `config.urls`): a
    page; None for any other request."""
    match = getattr(request, "resolver_match", None)
    if match is None or not getattr(match.func, "account_page", False):
        return None
    return _message(
        request,
        "Please try again",
        "The form could not be accepted: your browser did not send back the cookie that came with it. Allow cookies "
        "for this site, open the link from your email again and send the form once more.",
        status=403,
    )


def _token(request) -> str:
    # In the query on both methods: a form posts to the page's own address.
    return request.GET.get("token", "")


@_account_page(link_hint="A link works once. If your address is verified already, there is nothing more to do.")
def verify_email_page(request) -> HttpResponse:
    token = _token(request)
    if request.method == "POST":
        user = users.user_verify_email(token=token)
        return _message(request, "Your address is verified", f"Thank you: {user.email} is verified.", dashboard=True)
    user = tokens.verification_token_user(token)
    return render(request, "accounts/pages/verify_email.html", {"title": "Verify your address", "email": user.email})


@_account_page(link_hint="A reset link works once, for a short time. Ask for a new one.")
def reset_password_page(request) -> HttpResponse:
    token = _token(request)
    user = tokens.reset_token_user(token)

    def reset() -> HttpResponse:
        values = _submitted(request, ResetPasswordInputSerializer, twice=True, token=token)
        users.user_reset_password(token=token, password=values["password"])
        return _message(
            request,
            "Your password is set",
            f"Log in as {user.email} with the new password. Every session open with the old one has ended.",
            dashboard=True,
        )

    context = {"title": "Choose a new password", "email": user.email}
    return _form_page(request, "reset_password", _new_password("New password"), context, reset)


@_account_page(link_hint="Ask whoever invited you to invite your address again.")
def signup_page(request) -> HttpResponse:
    token = _token(request)
    if token:
        return _invitation_page(request, token)
    if settings.SIGNUPS_DISABLED:
        return _message(
            request,
            "Sign-up is by invitation",
            "Accounts on this installation are opened by invitation only. Ask the owner or an admin of your "
            "project to invite your address, then follow the link in the email they send.",
            status=403,
        )

    def sign_up() -> HttpResponse:
        values = _submitted(request, SignupInputSerializer, twice=True, email=request.POST.get("email", ""))
        user = users.user_signup(email=values["email"], password=values["password"])
        session_open(request, user)
        return _message(
            request,
            "Your account is ready",
            f"A link to verify your address is on its way to {user.email}: open it to confirm the address is yours.",
            dashboard=True,
        )

    fields = [Field("email", "Email address", "email", type="email"), *_new_password("Password")]
    return _form_page(request, "signup", fields, {"title": "Create your account"}, sign_up, Conflict)


def _invitation_page(request, token: str) -> HttpResponse:
    """An invitation: the invitee creates an account with the invited address, or, when the address has one, signs
    in to it (or asks for a password reset link); either way the token, mailed to the address, proves it, and the
    project is joined at once."""
    invitation = invitations.invitation_get(token=token)
    has_account = users.user_exists(email=invitation.email)
    if request.method == "POST" and has_account and request.POST.get("action") == "reset":
        users.user_request_password_reset(email=invitation.email)
        return _message(
            request,
            "Check your inbox",
            f"A link to set a new password is on its way to {invitation.email}. Set the password with it, then "
            "open the invitation's link again and sign in to accept.",
        )

    def join() -> HttpResponse:
        # One transaction, as an API request's: an account is not left behind by an acceptance that failed.
        with transaction.atomic():
            user = (_accepted_by_sign_in if has_account else _signed_up)(request, invitation, token)
        session_open(request, user)
        name = invitation.project.name
        return _message(
            request,
            f"Welcome to “{name}”",
            f"You are a member of the project “{name}” as {invitation.get_role_display()}.",
            dashboard=True,
        )

    fields = [Field("password", "Password", "current-password")] if has_account else _new_password("Password")
    context = {
        "title": f"Invitation to “{invitation.project.name}”",
        "invitation": invitation,
        "has_account": has_account,
    }
    return _form_page(request, "invitation", fields, context, join, AuthError, Conflict)


def _accepted_by_sign_in(request, invitation: Invitation, token: str) -> User:
    values = _submitted(request, CredentialsInputSerializer, twice=False, email=invitation.email)
    user = users.user_authenticate(email=values["email"], password=values["password"])
    users.user_login_recorded(user=user)
    invitations.invitation_accept(user=user, token=token)
    return user


def _signed_up(request, invitation: Invitation, token: str) -> User:
    values = _submitted(request, SignupInputSerializer, twice=True, email=invitation.email, token=token)
    return users.user_signup(email=values["email"], password=values["password"], invitation_token=token)
