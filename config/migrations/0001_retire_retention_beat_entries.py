"""The retention rules now run in one beat entry (`apply-retention`). django-celery-beat copies the schedule into
its database at start-up but never deletes an entry that left it, so the three entries it replaced would go on
publishing tasks that no longer exist."""

from django.db import migrations

RETIRED = ["purge-expired-idempotency-keys", "clear-old-email-bodies", "purge-webhook-receipts"]


def retire(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name__in=RETIRED).delete()


class Migration(migrations.Migration):
    dependencies = [("django_celery_beat", "0019_alter_periodictasks_options")]

    operations = [migrations.RunPython(retire, migrations.RunPython.noop)]
