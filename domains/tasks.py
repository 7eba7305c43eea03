import logging

from celery import shared_task
from django.utils import timezone

from domains.models import Domain
from domains.selectors import domains_due_for_check
from domains.services import DomainClaimLost, domain_check, domain_check_claim

logger = logging.getLogger(__name__)

# A check that waited longer than a run interval in the queue is stale: the next run queues a fresh one. A check is
# a few DNS lookups of DNS_TIMEOUT_SECONDS at most; one cut short by a time limit is made again by a later run.
CHECK_TASK_OPTIONS = {"acks_late": True, "ignore_result": True, "soft_time_limit": 60, "time_limit": 90}


@shared_task(**CHECK_TASK_OPTIONS)
def domain_check_task(domain_id: str) -> None:
    if not domain_check_claim(domain_id=domain_id):
        return
    domain = Domain.objects.select_related("project").filter(pk=domain_id).first()
    if domain is None:
        return
    try:
        domain_check(domain=domain)
    except DomainClaimLost:  # another project verified the name first; this pending claim is gone
        return


@shared_task(**CHECK_TASK_OPTIONS)
def domains_check_due() -> int:
    """Queue one check per due domain (pending ones every run, verified ones now and then), bounded per run."""
    ids = domains_due_for_check(now=timezone.now())
    for domain_id in ids:
        domain_check_task.apply_async(args=[str(domain_id)], expires=5 * 60)
    return len(ids)
