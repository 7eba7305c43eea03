"""Step executions get time-ordered ids (UUIDv7): a SEND_EMAIL step keys its email by this id, and the email takes
the id's time as its `created_at`, part of the partitioned emails table's primary key. No row changes."""

import uuid6
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("workflows", "0005_execution_contact_timeline")]

    operations = [
        migrations.AlterField(
            model_name="workflowstepexecution",
            name="id",
            field=models.UUIDField(default=uuid6.uuid7, editable=False, primary_key=True, serialize=False),
        ),
    ]
