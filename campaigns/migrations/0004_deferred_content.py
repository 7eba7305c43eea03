from django.db import migrations


def store_deferred_content(apps, schema_editor):
    """The content of every campaign that still has emails waiting to be personalized, which delivery now reads
    from messaging's own row instead of the campaign."""
    Campaign = apps.get_model("campaigns", "Campaign")
    DeferredContent = apps.get_model("messaging", "DeferredContent")
    Email = apps.get_model("messaging", "Email")
    waiting = Email.objects.filter(rendered=False, campaign_id__isnull=False).values("campaign_id").distinct()
    DeferredContent.objects.bulk_create(
        [
            DeferredContent(id=campaign.id, project_id=campaign.project_id, subject=campaign.subject, body=campaign.body)
            for campaign in Campaign.objects.filter(id__in=waiting)
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0003_campaign_scheduled_at"),
        ("messaging", "0009_deferred_content"),
    ]

    operations = [migrations.RunPython(store_deferred_content, migrations.RunPython.noop)]
