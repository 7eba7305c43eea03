"""Where a template is used: campaigns and workflow steps register finders here (in their `AppConfig.ready`),
so that messaging never imports them.

    register_template_usage("campaigns", lambda template: [{"id": ..., "name": ..., "status": ...}])
    register_template_usage("workflowSteps", lambda template: [{"workflowId": ..., "workflowName": ..., "stepId": ...}])
"""

from collections.abc import Callable

from messaging.models import Template

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
