"""Open and click tracking: signed tokens, and the rewriting of an HTML body at send time.

Every `<a href="http(s)://...">` of a tracked email becomes `PUBLIC_URL/c/<token>` and an open pixel
`PUBLIC_URL/o/<token>` goes before `</body>`. A click token signs the email id together with the target URL, so
an altered target or a token made for something else fails the signature (404): the redirect can never be used
to send people to an address we did not put in the email. Links to the service's own pages (unsubscribe,
subscribe, manage) are left alone: they must keep working, and List-Unsubscribe detection looks for them.
"""

import html as html_lib
import re
from collections.abc import Iterator

from django.conf import settings
from django.core import signing

from accounts.models import Project
from core.scan import NextOccurrence
from core.signing import Signer
from messaging.engagement.links import PAGES
from messaging.models import EmailType
from messaging.vocabulary import insert_before_body_end

_open_signer = Signer(salt="herald.messaging.tracking.open")
_click_signer = Signer(salt="herald.messaging.tracking.click")
MARKETING_TYPES = (EmailType.MARKETING, EmailType.HEADLESS)

_A_TAG = re.compile(r"<a\b", re.IGNORECASE)
_HREF = re.compile(r"""\shref\s*=\s*(["'])""", re.IGNORECASE)
_HTTP_URL = re.compile(r"""\s*+(https?://[^"']*+)""", re.IGNORECASE)


def tracking_applies(*, project: Project, email_type: str) -> bool:
    mode = project.tracking_mode
    if mode == Project.TrackingMode.DISABLED:
        return False
    if mode == Project.TrackingMode.MARKETING_ONLY:
        return email_type in MARKETING_TYPES
    return True


def open_token(email_id) -> str:
    return _open_signer.sign(str(email_id))


def open_token_read(token: str) -> str:
    """The email id; raises signing.BadSignature for a token we did not make."""
    return _open_signer.unsign(token)


def click_token(email_id, url: str) -> str:
    return _click_signer.sign_object([str(email_id), url], compress=True)


def click_token_read(token: str) -> tuple[str, str]:
    """(email id, target URL); raises signing.BadSignature for a token we did not make or whose target changed."""
    email_id, url = _click_signer.unsign_object(token)
    if not isinstance(email_id, str) or not isinstance(url, str):
        raise signing.BadSignature("Malformed click token")
    return email_id, url


def _own_page(url: str) -> bool:
    return any(url.startswith(f"{settings.PUBLIC_URL}/{page}/") for page in PAGES.values())


def _link_targets(html: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, URL) of the tracked `href` value of each `<a>` tag: its first `href` (before the tag's first `>`)
    whose value, quoted either way, is an absolute http(s) URL (not mailto:, tel:, #...); the URL without the spaces
    around it.

    1. Find the next `<a` and the first `>` after it (the end of its attributes; the text's end if none).
    2. Try its `href=` attributes in order: the first whose value starts with http(s):// and ends at the same quote
       is the link; continue after that quote.
    3. With none, no `<a` before that `>` can have one either: continue after the `>`, or stop at the text's end.

    Each character is read a bounded number of times (a regular expression scanning ahead to `>` from every `<a`
    read the rest of the body again for each: 60 KB of `<a ` took 11 s).
    """
    tag_end = NextOccurrence(html, ">")
    position = 0
    while tag := _A_TAG.search(html, position):
        end = tag_end.at_or_after(tag.end())
        for href in _HREF.finditer(html, tag.end(), len(html) if end < 0 else end):
            url = _HTTP_URL.match(html, href.end())
            if url and html.startswith(href.group(1), url.end()):
                yield href.end(), url.end(), url.group(1).rstrip()
                position = url.end() + 1
                break
        else:
            if end < 0:
                return
            position = end + 1


def with_tracking(html: str, *, email_id) -> str:
    """Rewrite the body's links into click redirects and add the open pixel."""
    base = settings.PUBLIC_URL
    parts, copied = [], 0
    for start, end, url in _link_targets(html):
        # Attribute values are HTML-escaped (`&amp;` in query strings): the redirect goes to the real URL.
        target = html_lib.unescape(url)
        if not _own_page(target):
            parts += [html[copied:start], f"{base}/c/{click_token(email_id, target)}"]
            copied = end
    html = "".join([*parts, html[copied:]])
    pixel = (
        f'<img src="{base}/o/{open_token(email_id)}" width="1" height="1" alt="" '
        'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />'
    )
    return insert_before_body_end(html, pixel)
