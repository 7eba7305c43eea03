"""The request side of `POST /v1/send`: parse the fields that take several shapes, resolve the request against its
template (explicit fields win) and check what a send needs; the queue side (`messaging.sending.services`) stores
and hands over what this accepts."""

from accounts.models import Project
from contacts.data_rules import validate_data
from core.errors import NotFound, ValidationFailed
from messaging.models import EmailType, Template
from messaging.sending import parse
from messaging.sending.services import Queued, SendContent, emails_queue
from messaging.vocabulary import Address


def emails_send_request(*, project: Project, body: dict, raw: dict) -> list[Queued]:
    """POST /v1/send: resolve the request against its template (explicit fields win), then queue it.

    `body` holds the typed fields validated by the view's serializer; `raw` the request as sent, for the fields
    that take several shapes (`to`, `from`, `reply`), parsed here with exact field paths.
    """
    recipients = parse.parse_recipients(raw.get("to"))
    sender = parse.parse_sender(raw.get("from"))
    reply = parse.parse_reply(raw.get("reply"))
    headers = parse.parse_headers(body.get("headers"))
    attachments = parse.parse_attachments(body.get("attachments"))
    data = validate_data(body["data"]) if body.get("data") is not None else None
    template = None
    if body.get("template"):
        template = Template.objects.filter(project=project, id=body["template"]).first()
        if template is None:
            raise NotFound("Template", body["template"])
    subject = body.get("subject") or (template.subject if template else None)
    html = body.get("body") or (template.body if template else None)
    if not subject:
        raise ValidationFailed.field(
            "subject", "Required unless the template has a subject", "invalid_type", received="undefined"
        )
    if not html:
        raise ValidationFailed.field(
            "body", "Required unless a template is given", "invalid_type", received="undefined"
        )
    if sender is None and template is not None:
        sender = Address(email=template.from_email)
    if sender is None:
        raise ValidationFailed.field(
            "from", "Required unless the template has a sender", "invalid_type", received="undefined"
        )
    # From name precedence: from.name, the deprecated `name`, the template's, the project's.
    from_name = sender.name or body.get("name") or (template.from_name if template else "") or project.name
    content = SendContent(
        subject=subject,
        body=html,
        sender=Address(email=sender.email, name=from_name),
        reply_to=reply or (template.reply_to if template else ""),
        type=template.type if template else EmailType.TRANSACTIONAL,
        template=template,
        headers=headers,
        attachments=attachments,
    )
    return emails_queue(
        project=project, recipients=recipients, content=content, subscribed=body.get("subscribed"), data=data
    )
