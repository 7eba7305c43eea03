"""One recipient's copy of a message: subject and body rendered with the recipient's variables and signed links,
click tracking where the project tracks this type, and the unsubscribe footer of marketing email.

Queueing personalizes each email it stores (`messaging.sending.services`); a campaign's fan-out stores its rows
unrendered and delivery personalizes them as it sends (`emails_personalize_deferred`), with the contact's data of
that moment, so that the fan-out writes rows and renders nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from accounts.models import Project
from contacts.models import Contact
from core.errors import ValidationFailed
from messaging.content import rendering
from messaging.engagement.links import PAGES, system_links
from messaging.engagement.tracking import tracking_applies, with_tracking
from messaging.models import DeferredContent, Email, EmailType
from messaging.vocabulary import insert_before_body_end


@dataclass(frozen=True)
class Personal:
    subject: str
    html: str
    text: str | None = None


def with_unsubscribe_footer(html: str, unsubscribe_url: str) -> str:
    """Marketing email carries an unsubscribe link; added unless the author already placed one."""
    if unsubscribe_url in html:
        return html
    footer = (
        '<p style="margin-top:24px;font-size:12px;color:#6b7280;text-align:center">'
        f'<a href="{unsubscribe_url}" style="color:#6b7280">Unsubscribe</a></p>'
    )
    return insert_before_body_end(html, footer)


def estimated_size(html: str, attachment_bytes: int, text: str | None = None) -> int:
    # Quoted-printable HTML and text parts (the text made from the HTML, unless the sender wrote one), base64
    # attachments (4/3), headers.
    written = len(html.encode()) * 2.2 if text is None else (len(html.encode()) + len(text.encode())) * 1.1
    return int(written) + attachment_bytes * 4 // 3 + 4096


def personalize(
    *,
    project: Project,
    subject: str,
    body: str,
    email_type: str,
    source: str,
    email_id,
    to_email: str,
    contact_id=None,
    subscribed: bool = True,
    variables: dict,
    attachment_bytes: int = 0,
    text: str | None = None,
    about=None,
) -> Personal:
    """The recipient's subject, body and, when the sender wrote one, text part (rendered as the subject is, not
    escaped). Content that does not parse falls back to plain substitution; content that this recipient's data
    pushes past a rendering limit, or past the message size cap, raises `ValidationFailed` at its field. A
    text-only message (a text and no body) has no HTML to carry tracking or a footer: it goes as written."""
    # Signing the page links costs about what rendering a short email does: done only when the content names one of
    # them or a marketing footer carries one.
    named = email_type == EmailType.MARKETING or any(
        name in body or name in subject or (text is not None and name in text) for name in PAGES
    )
    links = (
        system_links(contact_id=contact_id, email_id=email_id) if contact_id and named else dict.fromkeys(PAGES, "#")
    )
    # An email about another contact (a workflow's mail to a CUSTOM address) names that contact in its `id`, `email`
    # and `subscribed`; its links stay the recipient's own.
    scope = rendering.template_scope(
        contact_id=str(about.id if about else contact_id or ""),
        email=about.email if about else to_email,
        subscribed=about.subscribed if about else subscribed,
        data=variables,
        links=links,
    )
    rendered = rendering.render_email(subject=subject, body=body, scope=scope, lenient=True, text=text)
    html = rendered.html
    text_only = text is not None and not body
    # A test send is never tracked: its opens and clicks are the author's, not an audience's.
    if not text_only and source != Email.Source.TEST and tracking_applies(project=project, email_type=email_type):
        # Before the footer: its unsubscribe link is never tracked, and it stays the last thing of the body.
        html = with_tracking(html, email_id=email_id)
    if not text_only and email_type == EmailType.MARKETING and contact_id:
        html = with_unsubscribe_footer(html, links["unsubscribeUrl"])
    if estimated_size(html, attachment_bytes, rendered.text) > settings.SEND_MESSAGE_MAX_BYTES:
        raise ValidationFailed.field(
            "body", f"The message would exceed {settings.SEND_MESSAGE_MAX_BYTES} bytes", "too_big"
        )
    return Personal(subject=rendered.subject[:998], html=html, text=rendered.text)


def not_rendered(refused: ValidationFailed) -> str:
    """The error stored on an email whose personalization was refused."""
    return f"Not rendered: {refused.errors[0]['field']}: {refused.errors[0]['message']}"


def emails_personalize_deferred(emails: list[Email], fail: Callable[[Email, str], None]) -> list[Email]:
    """Personalize the claimed rows that a fan-out stored unrendered (in memory: the SENT mark stores the result)
    and return the rows to send; a row that cannot be is failed through `fail` (a rendering limit, the size cap,
    its campaign or its contact deleted meanwhile). Two queries for the whole batch, none for rendered rows."""
    deferred = [email for email in emails if not email.rendered]
    if not deferred:
        return emails
    contents = {
        row[0]: row[1:]
        for row in DeferredContent.objects.filter(id__in={email.campaign_id for email in deferred}).values_list(
            "id", "subject", "body"
        )
    }
    contacts = {
        row[0]: row[1:]
        for row in Contact.objects.filter(id__in={email.contact_id for email in deferred}).values_list(
            "id", "data", "subscribed"
        )
    }
    failed = set()
    for email in deferred:
        content, contact = contents.get(email.campaign_id), contacts.get(email.contact_id)
        if content is None or contact is None:
            gone = "content" if content is None else "contact"
            fail(email, f"The {gone} was deleted before the email was sent")
            failed.add(email.id)
            continue
        try:
            personal = personalize(
                project=email.project,
                subject=content[0],
                body=content[1],
                email_type=email.type,
                source=email.source,
                email_id=email.id,
                to_email=email.to_email,
                contact_id=email.contact_id,
                subscribed=contact[1],
                variables=contact[0],
            )
        except ValidationFailed as refused:
            fail(email, not_rendered(refused))
            failed.add(email.id)
            continue
        email.subject, email.html = personal.subject, personal.html
    return [email for email in emails if email.id not in failed]
