"""`event_contact_segment`: a contact's `segment.*` events, for its timeline, which otherwise reads every event of
the contact in its window to find the few segment entries and exits among them. Built while writes go on
(`core.partitions.index_create_online`): on PostgreSQL's partitioned events table, CONCURRENTLY one partition at a
time."""

from django.db import migrations, models

from core.partitions import index_create_online

INDEX = models.Index(
    fields=["contact", "created_at", "id"],
    condition=models.Q(name__startswith="segment."),
    name="event_contact_segment",
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(apps.get_model("contacts", "Event"), INDEX)
        return
    index_create_online(
        table="contacts_event",
        name=INDEX.name,
        definition="(contact_id, created_at, id) WHERE name LIKE 'segment.%'",
    )


def backwards(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX.name}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("contacts", "0008_event_partitioned")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[migrations.AddIndex(model_name="event", index=INDEX)],
        )
    ]
