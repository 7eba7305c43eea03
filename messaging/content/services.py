from django.utils import timezone

from accounts.models import Project
from core.usage import refuse_delete_while_used, used_in
from domains.services import sender_domain_for
from messaging.content import rendering
from messaging.models import Template

TEMPLATE_FIELDS = ("name", "description", "subject", "body", "from_email", "from_name", "reply_to", "type")


def content_check(*, project: Project, values: dict) -> None:
    """The rules beyond a field's own shape, for every writer of saved content (templates and campaigns, through
    the API or the admin), on the values given: the sender must be on a verified domain of the project (403), and
    subject and body must parse (422 at the field, with line and column) and render within the limits."""
    if "from_email" in values:
        sender_domain_for(project=project, address=values["from_email"])
    if values.get("subject"):
        rendering.check_syntax(field="subject", source=values["subject"], html=False)
    if values.get("body"):
        rendering.check_syntax(field="body", source=values["body"], html=True)


def template_create(*, project: Project, **values) -> Template:
    """Create a template; its sender must be on a verified domain (403) and its content must parse (422)."""
    content_check(project=project, values=values)
    template = Template(project=project, **{k: v for k, v in values.items() if k in TEMPLATE_FIELDS})
    template.full_clean()
    template.save()
    return template


def template_update(*, template: Template, **values) -> Template:
    changed = [name for name in TEMPLATE_FIELDS if name in values and getattr(template, name) != values[name]]
    content_check(project=template.project, values={name: values[name] for name in changed})
    for name in changed:
        setattr(template, name, values[name])
    if changed:
        template.updated_at = timezone.now()
        template.full_clean()
        template.save(update_fields=[*changed, "updated_at"])
    return template


def template_delete(*, template: Template) -> None:
    usage = used_in("template", project=template.project, of=template)
    names = [item.get("name") or item.get("workflowName") for items in usage.values() for item in items]
    refuse_delete_while_used(
        usage, f"Template is used by {', '.join(str(n) for n in names)}; remove it from them first", usedIn=usage
    )
    template.delete()


def template_duplicate(*, template: Template) -> Template:
    now = timezone.now()
    copy = Template(
        project_id=template.project_id,
        **{name: getattr(template, name) for name in TEMPLATE_FIELDS},
        created_at=now,
        updated_at=now,
    )
    copy.name = f"{template.name} (Copy)"[:255]
    copy.save()
    return copy


def project_messages_delete(project: Project) -> int:
    """A project reset's step (accounts.tenancy.registry): the project's emails, then its templates. The hourly figures and
    the suppression list stay: the reputation guard judges the project by them, and a reset must not wipe a bad
    record."""
    from messaging.models import AttachmentBundle, Email, Template

    emails, _ = Email.objects.filter(project=project).delete()
    AttachmentBundle.objects.filter(project=project).delete()
    templates, _ = Template.objects.filter(project=project).delete()
    return emails + templates
