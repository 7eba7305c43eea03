"""Signed links to the service's own pages, placed in emails as `unsubscribeUrl`, `subscribeUrl`, `manageUrl`.

A token carries the contact and the email it came from (for attribution) and is signed with the service
secret, so it cannot be guessed from a contact id or altered to act on another contact.
"""

from django.conf import settings

from core.signing import Signer

_signer = Signer(salt="herald.messaging.engagement.links")
PAGES = {"unsubscribeUrl": "unsubscribe", "subscribeUrl": "subscribe", "manageUrl": "manage"}


def link_token(*, contact_id, email_id) -> str:
    return _signer.sign_object([str(contact_id), str(email_id) if email_id else ""])


def link_token_read(token: str) -> tuple[str, str | None]:
    """(contact id, email id or None); raises signing.BadSignature for a token we did not make."""
    contact_id, email_id = _signer.unsign_object(token)
    return contact_id, email_id or None


def system_links(*, contact_id, email_id) -> dict[str, str]:
    token = link_token(contact_id=contact_id, email_id=email_id)
    return {name: f"{settings.PUBLIC_URL}/{page}/{token}" for name, page in PAGES.items()}
