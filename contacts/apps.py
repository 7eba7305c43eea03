from django.apps import AppConfig


class ContactsConfig(AppConfig):
    name = "contacts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.jobs.services import register_job_task

        # The jobs sweeper publishes these again when a job's worker or message was lost.
        from accounts.tenancy.registry import register_project_reset, register_setup_fact
        from contacts import bulk, imports, tasks
        from contacts.services import project_contact_count, project_contacts_delete

        # A project's setup state and reset (accounts.tenancy.registry); contacts go last, after the rows that use them.
        register_setup_fact("contactCount", project_contact_count)
        register_project_reset("contacts", project_contacts_delete, order=30)
        register_job_task(imports.JOB_TYPE, lambda job_id: tasks.contact_import_task.delay(job_id))
        for job_type in bulk.JOB_TYPES.values():
            register_job_task(job_type, lambda job_id: tasks.contacts_bulk_task.delay(job_id))
