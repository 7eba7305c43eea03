"""A pg_trgm GIN index on contact emails for the substring search of GET /contacts (PostgreSQL only; on SQLite
the search scans the project's contacts, which is fine at development sizes)."""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS contact_email_trgm ON contacts_contact USING gin (email gin_trgm_ops)"
    )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS contact_email_trgm")


class Migration(migrations.Migration):
    # CONCURRENTLY: adding the index to a large existing table must not block writes.
    atomic = False

    dependencies = [("contacts", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
