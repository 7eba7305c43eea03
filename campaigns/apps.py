from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The apps below learn about campaigns only through their hooks.
        from campaigns.selectors import campaigns_using_field, campaigns_using_segment
        from contacts.usage import register_field_usage
        from segments.services import register_segment_delete_blocker

        register_segment_delete_blocker(campaigns_using_segment)

        from accounts.tenancy.registry import register_project_reset, register_setup_fact
        from campaigns.selectors import last_campaign_sent_at
        from campaigns.services import project_campaigns_delete

        register_setup_fact("lastCampaignSentAt", last_campaign_sent_at)
        register_project_reset("campaigns", project_campaigns_delete, order=10)
        register_field_usage("campaigns", campaigns_using_field)

        from accounts.jobs.services import register_job_task
        from campaigns import sending, tasks

        # The jobs sweeper publishes a fan-out again when its worker or its message was lost.
        register_job_task(sending.JOB_TYPE, lambda job_id: tasks.campaign_fan_out_task.delay(job_id))

        from campaigns.stats import on_events_recorded
        from contacts.signals import events_recorded

        events_recorded.connect(on_events_recorded, dispatch_uid="campaigns.stats")

        from campaigns.activity import SOURCE, Directory, campaigns_upcoming
        from messaging.insights.registry import (
            register_activity_source,
            register_campaign_directory,
            register_upcoming_provider,
        )

        register_activity_source(SOURCE)
        register_upcoming_provider("campaigns", campaigns_upcoming)
        register_campaign_directory(Directory())

        from campaigns.selectors import campaigns_content
        from messaging.sending.personalize import register_campaign_content

        # Delivery personalizes a campaign's emails with the campaign's content (the fan-out stores them unrendered).
        register_campaign_content(campaigns_content)
