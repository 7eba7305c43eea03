"""Reads of templates."""

from django.db.models import Q, QuerySet

from accounts.models import Project
from messaging.models import Template


def template_list(*, project: Project, email_type: str | None = None, search: str = "") -> QuerySet[Template]:
    """The project's templates, of one type if given, whose name, description or subject contains `search`
    (case-insensitive)."""
    queryset = Template.objects.filter(project=project)
    if email_type:
        queryset = queryset.filter(type=email_type)
    if search:
        queryset = queryset.filter(
            Q(name__icontains=search) | Q(description__icontains=search) | Q(subject__icontains=search)
        )
    return queryset


def project_has_template(project: Project) -> bool:
    return Template.objects.filter(project=project).exists()
