"""Which Celery queue each task goes to, in one place (docs/operations.md "Queues").

A worker consumes the queues it is started with (`-Q`), so each kind of work waits only behind its own kind and a
worker can be given to one kind alone: the one-host default runs a worker for `delivery` and another for the rest
(deploy/systemd), so no flood of workflow steps or bulk jobs takes the slots that send mail. Each task declares its
own time limits where it is declared; `config/tests/test_queues.py` fails when a task has no route or no limits.
"""

# Mail handed to the relay or provider, and the handover of accepted mail to it: transactional latency.
DELIVERY = "delivery"
# Workflow steps (webhook calls among them), and the handover of started executions to them.
WORKFLOWS = "workflows"
# Work over many rows: imports, bulk changes, campaign fan-outs, segment computes, project resets, retention.
BULK = "bulk"
# The beat's checks, sweepers and drains: short runs, each bounded per run.
PERIODIC = "periodic"
# Celery's own default queue: a task without a route (the test above keeps there being none) still finds a worker.
DEFAULT = "celery"

QUEUES = (DELIVERY, WORKFLOWS, BULK, PERIODIC, DEFAULT)

_QUEUED = {
    DELIVERY: (
        "messaging.tasks.deliver_emails_task",
        "messaging.tasks.dispatch_emails_task",
        # Sign-up verification, password resets, invitations: transactional mail of the service's own.
        "accounts.tasks.send_account_email_task",
    ),
    WORKFLOWS: (
        "workflows.tasks.advance_executions_task",
        "workflows.tasks.dispatch_executions_task",
    ),
    BULK: (
        "contacts.tasks.contact_import_task",
        "contacts.tasks.contacts_bulk_task",
        "campaigns.tasks.campaign_fan_out_task",
        "segments.tasks.segment_recompute_task",
        # The incremental side of segment computes: one per changed contact, thousands after an import.
        "segments.tasks.segment_contact_reevaluate_task",
        "accounts.tasks.project_reset_task",
        "config.tasks.apply_retention_task",
        "config.tasks.ensure_partitions_task",
        "accounts.tasks.purge_expired_sessions_task",
    ),
    PERIODIC: (
        "messaging.tasks.sweep_emails_task",
        "messaging.tasks.drain_tracking_hits_task",
        "workflows.tasks.sweep_executions_task",
        "accounts.tasks.requeue_stalled_jobs_task",
        "campaigns.tasks.campaigns_start_due_task",
        "campaigns.tasks.campaigns_finish_sending_task",
        "segments.tasks.segments_refresh_due_task",
        "domains.tasks.domains_check_due",
        # A few DNS lookups of one domain, queued by the periodic run (and by nothing else).
        "domains.tasks.domain_check_task",
    ),
}

# Celery's `task_routes` (config/settings/base.py): a route names the queue; a publish's own options (a priority)
# are kept.
TASK_ROUTES = {name: {"queue": queue} for queue, names in _QUEUED.items() for name in names}
