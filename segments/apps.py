from django.apps import AppConfig


class SegmentsConfig(AppConfig):
    name = "segments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.tenancy.registry import ResetStep, project_resets
        from segments.services import project_segments_delete

        project_resets.register(ResetStep(name="segments", order=20, delete=project_segments_delete))
        # The contacts fields/events endpoints and the segment delete report (and refuse to delete) what a segment
        # condition uses.
        from core.usage import usage_finders
        from segments.selectors import segments_using_event, segments_using_field, segments_using_segment

        usage_finders.register(segments_using_field, key=("field", "segments"))
        usage_finders.register(segments_using_event, key=("event", "segments"))
        usage_finders.register(segments_using_segment, key=("segment", "segments"))

        from contacts.models import Contact
        from contacts.signals import contacts_changed, events_recorded
        from segments.receivers import on_contacts_changed, on_events_recorded

        events_recorded.connect(on_events_recorded, dispatch_uid="segments.on_events_recorded")
        contacts_changed.connect(on_contacts_changed, sender=Contact, dispatch_uid="segments.on_contacts_changed")
