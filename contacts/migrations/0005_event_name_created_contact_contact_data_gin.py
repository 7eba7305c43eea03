"""Indexes for segment conditions at scale (docs/performance.md, segments):

- `event_name_created_contact` (project, name, created_at, contact) replaces `event_project_name_created`, so that
  an `event.<name>` filter reads its contacts from the index alone; its prefix serves the old index's lookups.
- `contact_data_gin`, a GIN `jsonb_path_ops` index on contact data, serves `data @> '{"plan": "pro"}'`, the form
  equality on `data.<path>` compiles to (PostgreSQL only, like the trigram index of 0002; on SQLite the data filters
  scan the project's contacts, which is fine at development sizes).

On PostgreSQL both are built CONCURRENTLY: a large events or contacts table keeps taking writes meanwhile.
"""

from django.db import migrations, models

NEW = models.Index(fields=["project", "name", "created_at", "contact"], name="event_name_created_contact")
OLD = models.Index(fields=["project", "name", "created_at"], name="event_project_name_created")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        event = apps.get_model("contacts", "Event")
        schema_editor.add_index(event, NEW)
        schema_editor.remove_index(event, OLD)
        return
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS event_name_created_contact "
        "ON contacts_event (project_id, name, created_at, contact_id)"
    )
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS event_project_name_created")
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS contact_data_gin ON contacts_contact USING gin (data jsonb_path_ops)"
    )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        event = apps.get_model("contacts", "Event")
        schema_editor.add_index(event, OLD)
        schema_editor.remove_index(event, NEW)
        return
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS contact_data_gin")
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS event_project_name_created "
        "ON contacts_event (project_id, name, created_at)"
    )
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS event_name_created_contact")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("contacts", "0004_event_email_created")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[
                migrations.RemoveIndex(model_name="event", name="event_project_name_created"),
                migrations.AddIndex(model_name="event", index=NEW),
            ],
        )
    ]
