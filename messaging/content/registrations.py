"""What messaging tells other apps about its records (`core.usage`): which templates send from a domain (domains
refuses to delete a domain still in use) and which templates reference a contact field."""

from django.db.models import Q

from accounts.models import Project
from core.usage import usage_finders
from messaging.models import Template


def templates_sending_from(project: Project, domain_name: str) -> list[dict]:
    rows = Template.objects.filter(project=project).filter(
        Q(from_email__iendswith="@" + domain_name) | Q(from_email__iendswith="." + domain_name)
    )
    return [{"type": "template", "id": str(row.id), "name": row.name, "from": row.from_email} for row in rows]


def templates_using_field(project: Project, field: str) -> list[dict]:
    """Templates whose subject or body mentions the field's key inside a Liquid tag (a textual search: it may
    over-report, never under-report, which is the safe side for a delete guard)."""
    key = field.removeprefix("data.")
    rows = Template.objects.filter(project=project).filter(Q(body__contains=key) | Q(subject__contains=key))
    return [{"id": str(row.id), "name": row.name} for row in rows.only("id", "name")]


usage_finders.register(templates_sending_from, key=("domain", "templates"))
usage_finders.register(templates_using_field, key=("field", "templates"))
