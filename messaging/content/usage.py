"""Where a template is used: campaigns and workflow steps register finders here (in their `AppConfig.ready`),
so that messaging never imports them.

    register_template_usage("campaigns", lambda template: [{"id": ..., "name": ..., "status": ...}])
    register_template_usage("workflowSteps", lambda template: [{"workflowId": ..., "workflowName": ..., "stepId": ...}])
"""

from collections.abc import Callable
from dataclasses import dataclass

from messaging.models import Email, Template

TemplateUsageFinder = Callable[[Template], list[dict]]
USAGE_KINDS = ("campaigns", "workflowSteps")
_finders: dict[str, list[TemplateUsageFinder]] = {kind: [] for kind in USAGE_KINDS}


def register_template_usage(kind: str, finder: TemplateUsageFinder) -> None:
    if kind not in _finders:
        raise ValueError(f"Unknown template usage kind {kind!r}; expected one of {USAGE_KINDS}")
    if finder not in _finders[kind]:
        _finders[kind].append(finder)


def unregister_template_usage(kind: str, finder: TemplateUsageFinder) -> None:
    if finder in _finders.get(kind, []):
        _finders[kind].remove(finder)


def template_usage(template: Template) -> dict[str, list[dict]]:
    return {kind: [item for finder in finders for item in finder(template)] for kind, finders in _finders.items()}


@dataclass(frozen=True)
class TemplateUsage:
    campaigns: list[dict]
    workflow_steps: list[dict]
    emails_sent: int


def template_usage_summary(template: Template) -> TemplateUsage:
    """What uses the template, and how many emails were sent from it."""
    usage = template_usage(template)
    sent = Email.objects.filter(template=template, sent_at__isnull=False).count()
    return TemplateUsage(campaigns=usage["campaigns"], workflow_steps=usage["workflowSteps"], emails_sent=sent)
