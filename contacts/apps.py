from django.apps import AppConfig


class ContactsConfig(AppConfig):
    name = "contacts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.jobs.services import job_tasks

        # The jobs sweeper publishes these again when a job's worker or message was lost.
        from accounts.tenancy.registry import ResetStep, project_resets, setup_facts
        from contacts import bulk, imports, tasks
        from contacts.services import project_contact_count, project_contacts_delete

        # A project's setup state and reset (accounts.tenancy.registry); contacts go last, after the rows that use them.
        setup_facts.register(project_contact_count, key="contactCount")
        project_resets.register(ResetStep(name="contacts", order=30, delete=project_contacts_delete))
        job_tasks.register(lambda job_id: tasks.contact_import_task.delay(job_id), key=imports.JOB_TYPE)
        for job_type in bulk.JOB_TYPES.values():
            job_tasks.register(lambda job_id: tasks.contacts_bulk_task.delay(job_id), key=job_type)
