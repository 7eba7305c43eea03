"""Image uploads by project, so that each project's upload storage quota can be counted (images uploaded before this
migration are not counted)."""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0005_user_email_verified_invitation'),
        ('messaging', '0010_email_text'),
    ]

    operations = [
        migrations.CreateModel(
            name='ImageUpload',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=255, unique=True)),
                ('size', models.PositiveBigIntegerField()),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.project')),
            ],
            options={
                'indexes': [models.Index(fields=['project', 'created_at'], name='imageupload_project_created')],
            },
        ),
    ]
