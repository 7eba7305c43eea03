from django.apps import AppConfig


class MessagingConfig(AppConfig):
    name = "messaging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.tenancy.registry import ResetStep, project_resets, setup_facts
        from contacts.signals import events_recorded
        from messaging.content.selectors import project_has_template
        from messaging.content.services import project_messages_delete

        setup_facts.register(project_has_template, key="hasTemplate")
        project_resets.register(ResetStep(name="emails and templates", order=20, delete=project_messages_delete))
        from messaging.content import registrations  # noqa: F401 - usage finders for domains and contact fields
        from messaging.insights import (
            activity,  # noqa: F401 - registers the events as an activity source
            billing,  # noqa: F401 - registers billing warnings as an activity source
            timeline,  # noqa: F401 - registers a contact's emails and segment events for its timeline
        )
        from messaging.insights.rollup import on_events_recorded

        events_recorded.connect(on_events_recorded, dispatch_uid="messaging.email_stats")
