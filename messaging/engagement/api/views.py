"""The public tracking endpoints: `GET /o/<token>` (open pixel) and `GET /c/<token>` (click redirect).

A hit is counted through `messaging.engagement.hits` (queued for a worker when the cache is Redis, written at once otherwise);
the answer never depends on the database. A bad token is a 404 and records nothing. A client over its limit
(`messaging.engagement.limits`) still gets its pixel or redirect; its hit is not recorded.

`tracking_hit_answer` is the whole endpoint for a valid token; the Django views below and the WSGI fast path
(`messaging.engagement.wsgi`, which answers valid tokens in front of Django's middleware) both call it.
"""

import base64

from django.core import signing
from django.http import HttpResponse, HttpResponseNotFound, HttpResponseRedirect
from django.shortcuts import render
from django.utils.encoding import iri_to_uri
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from messaging.engagement.hits import tracking_hit
from messaging.engagement.tracking import click_token_read, open_token_read

PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")
NO_CACHE = {
    # Every load must reach us to be counted (mail client and proxy caches).
    "Cache-Control": "no-store, no-cache, must-revalidate, private, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
}
_BAD_TOKEN = (signing.BadSignature, ValueError, TypeError)


def tracking_hit_answer(kind: str, token: str, meta) -> str | None:
    """Count the hit of a valid `token` ("open" or "click") by the client of `meta` (the request's META or the WSGI
    environ); returns where to send the reader (the percent-encoded click target, "" for the pixel), or None for a
    token we did not sign: nothing is counted then, nor when the client is over its limit."""
    try:
        if kind == "open":
            email_id, target = open_token_read(token), ""
        else:
            email_id, target = click_token_read(token)
    except _BAD_TOKEN:
        return None
    # A valid token of an email deleted since still gets its image or redirect; nothing is counted then. So does a
    # client over its limit: a reader must never see an error for opening or clicking.
    tracking_hit(kind=kind, email_id=email_id, link=target, meta=meta)
    return iri_to_uri(target)


# Token-authenticated links opened by mail clients: no cookie to protect, and a wrong method gets the 405 envelope.
@csrf_exempt
@require_GET
def open_pixel(request, token: str) -> HttpResponse:
    if tracking_hit_answer("open", token, request.META) is None:
        return HttpResponseNotFound(headers=NO_CACHE)
    return HttpResponse(PIXEL, content_type="image/gif", headers=NO_CACHE)


@csrf_exempt
@require_GET
def click_redirect(request, token: str) -> HttpResponse:
    target = tracking_hit_answer("click", token, request.META)
    if target is None:
        return render(
            request,
            "messaging/message.html",
            {"title": "Link not valid", "text": "This link is not valid. Please use the link from your email."},
            status=404,
        )
    return HttpResponseRedirect(target, headers=NO_CACHE)
