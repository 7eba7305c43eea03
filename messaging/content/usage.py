"""What uses a template (the finders of `core.usage`, registered by campaigns and workflows), with the number of
emails sent from it."""

from dataclasses import dataclass

from core.usage import used_in
from messaging.models import Email, Template


@dataclass(frozen=True)
class TemplateUsage:
    campaigns: list[dict]
    workflow_steps: list[dict]
    emails_sent: int


def template_usage_summary(template: Template) -> TemplateUsage:
    """What uses the template, and how many emails were sent from it."""
    usage = used_in("template", project=template.project, of=template)
    sent = Email.objects.filter(template=template, sent_at__isnull=False).count()
    return TemplateUsage(campaigns=usage["campaigns"], workflow_steps=usage["workflowSteps"], emails_sent=sent)
