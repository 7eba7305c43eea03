"""Bulk subscribe, unsubscribe and delete of up to 1,000 contacts, queued as jobs.

Ids that are not contacts of the job's project (unknown, or another project's) are reported as not found and never
touched. Subscription changes go through `contacts_subscription_bulk_set`, so each changed contact gets its event.
"""

from django.db import transaction

from accounts.jobs.services import job_create, job_run
from accounts.models import Job, Project
from contacts.models import Contact
from contacts.services import contacts_delete_bulk, contacts_subscription_bulk_set
from core.commit import after_commit

JOB_TYPES = {"subscribe": "BULK_SUBSCRIBE", "unsubscribe": "BULK_UNSUBSCRIBE", "delete": "BULK_DELETE"}


def contacts_bulk_start(*, project: Project, action: str, contact_ids: list) -> Job:
    from contacts.tasks import contacts_bulk_task

    unique = list(dict.fromkeys(str(contact_id) for contact_id in contact_ids))
    job = job_create(project=project, type=JOB_TYPES[action], params={"contactIds": unique})
    after_commit(
        lambda: contacts_bulk_task.delay(str(job.id)),
        what=f"publish job {job.id} (the stalled-jobs sweeper publishes it)",
    )
    return job


def _run_bulk(job: Job, report) -> dict:
    ids = job.params["contactIds"]
    project = job.project
    with transaction.atomic():
        contacts = list(Contact.objects.select_for_update().filter(project=project, id__in=ids).order_by("id"))
        found = {str(c.id) for c in contacts}
        result = {
            "totalRows": len(ids),
            "successCount": len(found),
            "createdCount": 0,
            "updatedCount": 0,
            "unchangedCount": 0,
            "failureCount": len(ids) - len(found),
            "errors": [
                {"row": index, "email": None, "contactId": contact_id, "error": "Contact not found"}
                for index, contact_id in enumerate(ids, start=1)
                if contact_id not in found
            ][:100],
        }
        if job.type == JOB_TYPES["delete"]:
            result["deletedCount"] = len(contacts_delete_bulk(project=project, contact_ids=[c.id for c in contacts]))
        else:
            subscribed = job.type == JOB_TYPES["subscribe"]
            changed = contacts_subscription_bulk_set(
                project=project, contacts=contacts, subscribed=subscribed, source="bulk"
            )
            result["updatedCount"] = len(changed)
            result["unchangedCount"] = len(contacts) - len(changed)
    return result


def contacts_bulk_run(*, job_id) -> Job | None:
    return job_run(job_id, _run_bulk)
