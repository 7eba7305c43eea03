from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Templates, event names and contact fields report the workflows using them (and refuse to be deleted
        # while they do) through their apps' hooks, so that those apps never import this one.
        from contacts.signals import events_recorded
        from contacts.usage import register_event_usage, register_field_usage
        from messaging.content.usage import register_template_usage
        from workflows.receivers import on_events_recorded
        from workflows.selectors import steps_using_template, workflows_using_event, workflows_using_field

        register_template_usage("workflowSteps", steps_using_template)

        from accounts.tenancy.registry import register_project_reset, register_setup_fact
        from workflows.selectors import project_has_enabled_workflow
        from workflows.services import project_workflows_delete

        register_setup_fact("hasEnabledWorkflow", project_has_enabled_workflow)
        register_project_reset("workflows", project_workflows_delete, order=10)
        register_event_usage("workflows", workflows_using_event)
        register_field_usage("workflows", workflows_using_field)
        # Events start workflows and resume waiting executions (docs/workflows.md "Triggers").
        events_recorded.connect(on_events_recorded, dispatch_uid="workflows.on_events_recorded")

        from messaging.insights.registry import (
            register_activity_counter,
            register_activity_source,
            register_upcoming_provider,
        )
        from workflows.activity import SOURCES, workflows_started_count, workflows_upcoming

        for source in SOURCES:
            register_activity_source(source)
        register_upcoming_provider("workflows", workflows_upcoming)
        register_activity_counter("totalWorkflowsStarted", workflows_started_count)
