from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Templates, event names and contact fields report the workflows using them (and refuse to be deleted
        # while they do) through their apps' hooks, so that those apps never import this one.
        from contacts.signals import events_recorded
        from core.usage import usage_finders
        from workflows.receivers import on_events_recorded
        from workflows.selectors import steps_using_template, workflows_using_event, workflows_using_field

        usage_finders.register(steps_using_template, key=("template", "workflowSteps"))

        from accounts.tenancy.registry import ResetStep, project_resets, setup_facts
        from workflows.selectors import project_has_enabled_workflow
        from workflows.services import project_workflows_delete

        setup_facts.register(project_has_enabled_workflow, key="hasEnabledWorkflow")
        project_resets.register(ResetStep(name="workflows", order=10, delete=project_workflows_delete))
        usage_finders.register(workflows_using_event, key=("event", "workflows"))
        usage_finders.register(workflows_using_field, key=("field", "workflows"))
        # Events start workflows and resume waiting executions (docs/workflows.md "Triggers").
        events_recorded.connect(on_events_recorded, dispatch_uid="workflows.on_events_recorded")

        from messaging.insights.registry import activity_counters, activity_sources, upcoming_providers
        from workflows.activity import SOURCES, workflows_started_count, workflows_upcoming

        for source in SOURCES:
            activity_sources.register(source, key=source.name)
        upcoming_providers.register(workflows_upcoming, key="workflows")
        activity_counters.register(workflows_started_count, key="totalWorkflowsStarted")
