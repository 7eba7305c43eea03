"""Open and click tracking: signed tokens, and the rewriting of an HTML body at send time.

Every `<a href="http(s)://...">` of a tracked email becomes `PUBLIC_URL/c/<token>` and an open pixel
`PUBLIC_URL/o/<token>` goes before `</body>`. A click token signs the email id together with the target URL, so
an altered target or a token made for something else fails the signature (404): the redirect can never be used
to send people to an address we did not put in the email. Links to the service's own pages (unsubscribe,
subscribe, manage) are left alone: they must keep working, and List-Unsubscribe detection looks for them.
"""

import html as html_lib
import re

from django.conf import settings
from django.core import signing

from accounts.models import Project
from messaging.engagement.links import PAGES
from messaging.models import EmailType
from messaging.sending.mime import insert_before_body_end

_open_signer = signing.Signer(salt="herald.messaging.tracking.open")
_click_signer = signing.Signer(salt="herald.messaging.tracking.click")
MARKETING_TYPES = (EmailType.MARKETING, EmailType.HEADLESS)

# The href of an <a> tag, quoted either way; only absolute http(s) targets are tracked (not mailto:, tel:, #...).
_LINK = re.compile(r"""(<a\b[^>]*?\shref\s*=\s*)(["'])\s*(https?://[^"']*?)\s*\2""", re.IGNORECASE | re.DOTALL)


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


def with_tracking(html: str, *, email_id) -> str:
    """Rewrite the body's links into click redirects and add the open pixel."""
    base = settings.PUBLIC_URL

    def rewrite(match: re.Match) -> str:
        # Attribute values are HTML-escaped (`&amp;` in query strings): the redirect goes to the real URL.
        target = html_lib.unescape(match.group(3))
        if _own_page(target):
            return match.group(0)
        quote = match.group(2)
        return f"{match.group(1)}{quote}{base}/c/{click_token(email_id, target)}{quote}"

    html = _LINK.sub(rewrite, html)
    pixel = (
        f'<img src="{base}/o/{open_token(email_id)}" width="1" height="1" alt="" '
        'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />'
    )
    return insert_before_body_end(html, pixel)
