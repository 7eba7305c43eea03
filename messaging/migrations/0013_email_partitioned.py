"""On PostgreSQL, emails become a table partitioned by month on `created_at` (docs/scaling.md "Partitioned
history"), converted in place as events were (`contacts.0008_event_partitioned`): the existing table is attached as
the partition of everything before next month, so no row is copied and writes go on but for a moment's lock.
Django's model is unchanged: `id` stays its primary key (the database's is (id, created_at)). SQLite keeps the
plain table."""

from django.db import migrations
from django.utils import timezone

from core.partitions import is_partitioned, partition_in_place


def partition(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql" and not is_partitioned("messaging_email"):
        partition_in_place(table="messaging_email", column="created_at", now=timezone.now(), log=lambda line: None)


class Migration(migrations.Migration):
    # The unique index is built CONCURRENTLY and the steps commit one by one (core.partitions.partition_in_place).
    atomic = False
    dependencies = [("messaging", "0012_email_partition_ready")]

    operations = [migrations.RunPython(partition, elidable=False)]
