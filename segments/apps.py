from django.apps import AppConfig


class SegmentsConfig(AppConfig):
    name = "segments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The contacts fields/events endpoints report (and refuse to delete) what a segment condition uses.
        from accounts.tenancy.registry import register_project_reset
        from contacts.usage import register_event_usage, register_field_usage
        from segments.services import project_segments_delete

        register_project_reset("segments", project_segments_delete, order=20)
        from segments.selectors import segments_using_event, segments_using_field

        register_field_usage("segments", segments_using_field)
        register_event_usage("segments", segments_using_event)

        from contacts.models import Contact
        from contacts.signals import contacts_changed, events_recorded
        from segments.receivers import on_contacts_changed, on_events_recorded

        events_recorded.connect(on_events_recorded, dispatch_uid="segments.on_events_recorded")
        contacts_changed.connect(on_contacts_changed, sender=Contact, dispatch_uid="segments.on_contacts_changed")
