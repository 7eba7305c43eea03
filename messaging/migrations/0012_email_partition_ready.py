"""What stands in the way of partitioning emails by month (docs/scaling.md "Partitioned history"), removed: new ids
are UUIDv7; the foreign keys that name an email (a suppression's source, a webhook receipt's email) lose their
database constraint, which would have to name the partitioned table's whole primary key (id, created_at); and the
unique (campaign, contact) index becomes a plain one, as a partitioned table's unique indexes must hold
`created_at` (the campaign fan-out keeps the rule, `messaging.sending.services._queue_unrendered`). On PostgreSQL
the new index is built CONCURRENTLY before the unique one is dropped, so writes go on."""

import django.db.models.deletion
import uuid6
from django.db import migrations, models

from core.partitions import index_create_online

CAMPAIGN_ROWS = models.Q(("campaign_id__isnull", False))
UNIQUE = models.UniqueConstraint(
    fields=["campaign_id", "contact"], name="email_campaign_contact", condition=CAMPAIGN_ROWS
)
INDEX = models.Index(fields=["campaign_id", "contact"], name="email_campaign_contact", condition=CAMPAIGN_ROWS)


def index_without_uniqueness(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        model = apps.get_model("messaging", "Email")
        schema_editor.remove_constraint(model, UNIQUE)
        schema_editor.add_index(model, INDEX)
        return
    index_create_online(
        table="messaging_email",
        name="email_campaign_contact_plain",
        definition="(campaign_id, contact_id) WHERE campaign_id IS NOT NULL",
    )
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX CONCURRENTLY IF EXISTS email_campaign_contact")
        cursor.execute("ALTER INDEX email_campaign_contact_plain RENAME TO email_campaign_contact")


class Migration(migrations.Migration):
    # CREATE and DROP INDEX CONCURRENTLY cannot run in a transaction.
    atomic = False
    dependencies = [
        ("accounts", "0006_invitation_sent_at"),
        ("contacts", "0008_event_partitioned"),
        ("messaging", "0011_image_upload"),
    ]

    operations = [
        migrations.AlterField(
            model_name="email",
            name="id",
            field=models.UUIDField(default=uuid6.uuid7, editable=False, primary_key=True, serialize=False),
        ),
        migrations.AlterField(
            model_name="suppression",
            name="source_email",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="messaging.email",
            ),
        ),
        migrations.AlterField(
            model_name="webhookreceipt",
            name="email",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="messaging.email",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="email", name="email_campaign_contact"),
                migrations.AddIndex(model_name="email", index=INDEX),
            ],
            database_operations=[migrations.RunPython(index_without_uniqueness, elidable=False)],
        ),
    ]
