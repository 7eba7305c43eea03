"""`execution_contact_timeline` (contact, started_at, id): a contact's executions, newest first, for its timeline in
the console; on PostgreSQL built CONCURRENTLY, so a large executions table keeps taking writes meanwhile."""

from django.db import migrations, models

TIMELINE = models.Index(fields=["contact", "started_at", "id"], name="execution_contact_timeline")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(apps.get_model("workflows", "WorkflowExecution"), TIMELINE)
        return
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS execution_contact_timeline "
        "ON workflows_workflowexecution (contact_id, started_at, id)"
    )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.remove_index(apps.get_model("workflows", "WorkflowExecution"), TIMELINE)
        return
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS execution_contact_timeline")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("workflows", "0004_chain"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[migrations.AddIndex(model_name="workflowexecution", index=TIMELINE)],
        ),
    ]
