from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The apps below learn about campaigns only through their hooks.
        from campaigns.selectors import campaigns_using_field, campaigns_using_segment
        from core.usage import usage_finders

        usage_finders.register(campaigns_using_segment, key=("segment", "campaigns"))

        from accounts.tenancy.registry import ResetStep, project_resets, setup_facts
        from campaigns.selectors import last_campaign_sent_at
        from campaigns.services import project_campaigns_delete

        setup_facts.register(last_campaign_sent_at, key="lastCampaignSentAt")
        project_resets.register(ResetStep(name="campaigns", order=10, delete=project_campaigns_delete))
        usage_finders.register(campaigns_using_field, key=("field", "campaigns"))

        from accounts.jobs.services import job_tasks
        from campaigns import sending, tasks

        # The jobs sweeper publishes a fan-out again when its worker or its message was lost.
        job_tasks.register(lambda job_id: tasks.campaign_fan_out_task.delay(job_id), key=sending.JOB_TYPE)

        from campaigns.stats import on_events_recorded
        from contacts.signals import events_recorded

        events_recorded.connect(on_events_recorded, dispatch_uid="campaigns.stats")

        from campaigns.activity import NOT_SENT_SOURCE, SOURCE, Directory, campaigns_upcoming
        from messaging.insights.registry import activity_sources, campaign_directories, upcoming_providers

        for source in (SOURCE, NOT_SENT_SOURCE):
            activity_sources.register(source, key=source.name)
        upcoming_providers.register(campaigns_upcoming, key="campaigns")
        campaign_directories.register(Directory())
