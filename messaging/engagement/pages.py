"""The hosted pages behind `unsubscribeUrl`, `subscribeUrl` and `manageUrl`: plain server-rendered HTML that works
without JavaScript or cookies.

A page is authenticated by the signed token in its URL alone (`messaging.engagement.links`). A GET only shows a page with a
button, so that link scanners and prefetching mail clients change nothing; the change is a POST. A POST to the
unsubscribe URL is also the RFC 8058 one-click endpoint (`List-Unsubscribe-Post: List-Unsubscribe=One-Click`).

A client address over its limit (`messaging.engagement.limits`) gets a short 429 page, except for a one-click
unsubscribe: mail providers send those from their own servers, for all their readers, and an unsubscribe must
never be lost to a limit (repeated, it changes nothing and costs one read).
"""

from django.core import signing
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from contacts.models import Contact
from contacts.services import contact_subscription_set
from messaging.engagement.limits import PAGES, limit_exceeded
from messaging.engagement.links import link_token_read
from messaging.engagement.services import SNOOZE_PERIODS, contact_snooze_set

SOURCE = "page"


class _Gone(Exception):
    """A valid link whose contact has since been deleted."""


def _contact(token: str) -> Contact:
    """The contact a token was made for; raises signing.BadSignature for a token we did not make, _Gone when the
    contact no longer exists."""
    contact_id, _email_id = link_token_read(token)
    contact = Contact.objects.select_related("project").filter(pk=contact_id).first()
    if contact is None:
        raise _Gone
    return contact


def _message(request, title: str, text: str, status: int = 200, contact: Contact | None = None) -> HttpResponse:
    """A page that only tells something; with the contact, it carries the sending project's name as every page of
    a valid link does."""
    context = {"title": title, "text": text, "contact": contact}
    return render(request, "messaging/message.html", context, status=status)


def _token_page(*, one_click: bool = False):
    """Resolve the token for `view(request, contact, token)`: a forged or altered token is a 404 page, a deleted
    contact a friendly page (there is nothing left to unsubscribe). Every request counts against the client's
    limit first, except an RFC 8058 one-click POST to a `one_click` page.

    CSRF: these pages are exempt on purpose. The credential is the signed token in the URL, not a cookie, so a
    forged cross-site POST gains nothing the token itself does not already grant; and mail clients send the
    RFC 8058 one-click POST without any cookie or CSRF token.
    """

    def decorator(view):
        @csrf_exempt
        @never_cache
        @require_http_methods(["GET", "POST"])
        def wrapped(request, token: str):
            refused = _over_limit(request, one_click=one_click)
            if refused is not None:
                return refused
            try:
                contact = _contact(token)
            except (signing.BadSignature, ValueError, TypeError):
                return _message(
                    request, "Link not valid", "This link is not valid. Please use the link from your email.", 404
                )
            except _Gone:
                if request.method == "POST" and _is_one_click(request):
                    return HttpResponse(status=200)
                return _message(
                    request,
                    "Nothing to change",
                    "We no longer hold your address for this list, so there is nothing to change and you will not receive our emails.",
                )
            return view(request, contact, token)

        wrapped.__name__ = view.__name__
        wrapped.__doc__ = view.__doc__
        return wrapped

    return decorator


def _over_limit(request, *, one_click: bool) -> HttpResponse | None:
    """The 429 page when the client is over its limit; None to go on (always for a one-click unsubscribe)."""
    if one_click and request.method == "POST" and _is_one_click(request):
        return None
    state = limit_exceeded(PAGES, request.META)
    if state is None:
        return None
    response = _message(
        request, "Too many requests", "Too many requests from your network. Please try again in a minute.", 429
    )
    response["Retry-After"] = str(state.reset)
    return response


def _is_one_click(request) -> bool:
    return request.POST.get("List-Unsubscribe") == "One-Click"


@_token_page(one_click=True)
def unsubscribe_page(request, contact: Contact, token: str) -> HttpResponse:
    if request.method == "GET":
        return render(request, "messaging/unsubscribe.html", {"contact": contact, "token": token})
    contact_subscription_set(contact=contact, subscribed=False, source=SOURCE, email_id=link_token_read(token)[1])
    if _is_one_click(request):
        # RFC 8058: the mail client only needs the status, nobody reads a page.
        return HttpResponse(status=200)
    return render(request, "messaging/unsubscribed.html", {"contact": contact, "token": token})


@_token_page()
def subscribe_page(request, contact: Contact, token: str) -> HttpResponse:
    if request.method == "GET":
        return render(request, "messaging/subscribe.html", {"contact": contact, "token": token})
    contact_subscription_set(contact=contact, subscribed=True, source=SOURCE)
    return _message(request, "You are subscribed", f"{contact.email} will receive our emails again.", contact=contact)


@_token_page()
def manage_page(request, contact: Contact, token: str) -> HttpResponse:
    notice = ""
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "unsubscribe":
            contact_subscription_set(
                contact=contact, subscribed=False, source=SOURCE, email_id=link_token_read(token)[1]
            )
            notice = "You are unsubscribed."
        elif action == "subscribe":
            contact_subscription_set(contact=contact, subscribed=True, source=SOURCE)
            notice = "You are subscribed."
        elif action == "snooze" and request.POST.get("period") in SNOOZE_PERIODS:
            contact_snooze_set(contact=contact, period=request.POST["period"])
            notice = f"Marketing emails are paused for {SNOOZE_PERIODS[request.POST['period']][0]}."
        elif action == "resume":
            contact_snooze_set(contact=contact, period=None)
            notice = "Marketing emails are no longer paused."
        else:
            return _message(
                request, "Nothing changed", "Please choose one of the options on the page.", 400, contact=contact
            )
    context = {
        "contact": contact,
        "token": token,
        "notice": notice,
        "snoozed": contact.snoozed_until is not None and contact.snoozed_until > timezone.now(),
        "periods": [(key, label) for key, (label, _, _) in SNOOZE_PERIODS.items()],
    }
    return render(request, "messaging/manage.html", context)
