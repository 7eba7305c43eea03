"""The public tracking endpoints: `GET /o/<token>` (open pixel) and `GET /c/<token>` (click redirect).

A hit is counted through `messaging.hits` (queued for a worker when the cache is Redis, written at once otherwise);
the answer never depends on the database. A bad token is a 404 and records nothing.
"""

import base64

from django.core import signing
from django.http import HttpResponse, HttpResponseNotFound, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_GET

from messaging.hits import tracking_hit
from messaging.tracking import click_token_read, open_token_read

PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")
_NO_CACHE = {
    # Every load must reach us to be counted (mail client and proxy caches).
    "Cache-Control": "no-store, no-cache, must-revalidate, private, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
}
_BAD_TOKEN = (signing.BadSignature, ValueError, TypeError)


@require_GET
def open_pixel(request, token: str) -> HttpResponse:
    try:
        email_id = open_token_read(token)
    except _BAD_TOKEN:
        return HttpResponseNotFound(headers=_NO_CACHE)
    # A valid token of an email deleted since still gets its image (no broken picture); nothing is counted.
    tracking_hit(kind="open", email_id=email_id)
    return HttpResponse(PIXEL, content_type="image/gif", headers=_NO_CACHE)


@require_GET
def click_redirect(request, token: str) -> HttpResponse:
    try:
        email_id, url = click_token_read(token)
    except _BAD_TOKEN:
        return render(
            request,
            "messaging/message.html",
            {"title": "Link not valid", "text": "This link is not valid. Please use the link from your email."},
            status=404,
        )
    # The target came from our own signature: follow it even when the email row has since been deleted.
    tracking_hit(kind="click", email_id=email_id, link=url)
    return HttpResponseRedirect(url, headers=_NO_CACHE)
