"""`Email.text`: the plain-text alternative its sender wrote (a message submitted over SMTP), null when delivery makes
it from the HTML. The retention index `email_body_kept_created` then covers rows whose body is that text alone (a
text-only message has no HTML), so that the retention run clears them too.

The column is nullable without a default: adding it rewrites nothing. On PostgreSQL the index is rebuilt
CONCURRENTLY, so a large emails table keeps taking writes meanwhile.
"""

from django.db import migrations, models

KEPT = models.Index(
    fields=["created_at"],
    name="email_body_kept_created",
    condition=~models.Q(html="") | models.Q(text__isnull=False),
)
KEPT_BEFORE = models.Index(fields=["created_at"], name="email_body_kept_created", condition=~models.Q(html=""))


def _swap(apps, schema_editor, old: models.Index, new: models.Index, condition: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        email = apps.get_model("messaging", "Email")
        schema_editor.remove_index(email, old)
        schema_editor.add_index(email, new)
        return
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS email_body_kept_created")
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS email_body_kept_created ON messaging_email (created_at) "
        f"WHERE {condition}"
    )


def forwards(apps, schema_editor):
    _swap(apps, schema_editor, KEPT_BEFORE, KEPT, "(NOT (html = '') OR text IS NOT NULL)")


def backwards(apps, schema_editor):
    _swap(apps, schema_editor, KEPT, KEPT_BEFORE, "NOT (html = '')")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("messaging", "0009_deferred_content"),
    ]

    operations = [
        migrations.AddField(
            model_name="email",
            name="text",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="email", name="email_body_kept_created"),
                migrations.AddIndex(model_name="email", index=KEPT),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
