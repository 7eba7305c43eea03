"""Chains of causes and the daily cap (docs/workflows.md, "Chains of causes"):

- `WorkflowExecution.chain`, the chain of causes of the event that started an execution (`[]` for the executions
  there are: nothing recorded one);
- `execution_contact_started` (workflow, contact, started_at), which counts a contact's executions of a workflow in
  the last 24 hours from the index alone; on PostgreSQL built CONCURRENTLY, so a large executions table keeps taking
  writes meanwhile;
- `RefusedStart`, the starts refused by either, each a `workflow.refused` activity item.
"""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

STARTED = models.Index(fields=["workflow", "contact", "started_at"], name="execution_contact_started")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(apps.get_model("workflows", "WorkflowExecution"), STARTED)
        return
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS execution_contact_started "
        "ON workflows_workflowexecution (workflow_id, contact_id, started_at)"
    )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.remove_index(apps.get_model("workflows", "WorkflowExecution"), STARTED)
        return
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS execution_contact_started")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0005_user_email_verified_invitation"),
        ("contacts", "0007_event_chain"),
        ("workflows", "0003_step_execution_claim_token"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflowexecution",
            name="chain",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[migrations.AddIndex(model_name="workflowexecution", index=STARTED)],
        ),
        migrations.CreateModel(
            name="RefusedStart",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                (
                    "reason",
                    models.CharField(
                        choices=[("CHAIN_DEPTH", "Chain Depth"), ("DAILY_CAP", "Daily Cap")], max_length=11
                    ),
                ),
                ("trigger_event_id", models.UUIDField()),
                ("event_name", models.CharField(max_length=255)),
                ("chain", models.JSONField(blank=True, default=list)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "contact",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="contacts.contact"
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.project",
                    ),
                ),
                (
                    "workflow",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workflows.workflow",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["project", "created_at", "id"], name="refused_start_project_created")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("workflow", "trigger_event_id"), name="refused_start_one_per_event"
                    )
                ],
            },
        ),
    ]
