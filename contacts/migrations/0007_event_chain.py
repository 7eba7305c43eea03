"""`Event.chain`: the chain of causes of an event that an automated run recorded (docs/workflows.md, "Chains of
causes"). Nullable without a default: adding it rewrites nothing, and every other event keeps null."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("contacts", "0006_event_id_uuid7")]

    operations = [
        migrations.AddField(model_name="event", name="chain", field=models.JSONField(blank=True, null=True)),
    ]
