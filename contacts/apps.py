from django.apps import AppConfig


class ContactsConfig(AppConfig):
    name = "contacts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.jobs import register_job_task
        from contacts import bulk, imports, tasks

        # The jobs sweeper publishes these again when a job's worker or message was lost.
        register_job_task(imports.JOB_TYPE, lambda job_id: tasks.contact_import_task.delay(job_id))
        for job_type in bulk.JOB_TYPES.values():
            register_job_task(job_type, lambda job_id: tasks.contacts_bulk_task.delay(job_id))
