"""Every periodic task of the service, in one place. django-celery-beat copies these into its database
schedule at start-up, where operators can pause or retime them in the admin."""

from datetime import timedelta

BEAT_SCHEDULE = {
    # Jobs (imports, bulk changes) whose worker died or whose message was lost are published again; the next
    # worker resumes them from their checkpoint.
    "requeue-stalled-jobs": {
        "task": "accounts.tasks.requeue_stalled_jobs_task",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 50},
    },
    # Browser sessions past their age are refused already; this keeps the session table small.
    "purge-expired-sessions": {
        "task": "accounts.tasks.purge_expired_sessions_task",
        "schedule": timedelta(hours=6),
        "options": {"expires": 60 * 60},
    },
    # Domains: owners wait for pending domains to verify after publishing records (a check every 5 minutes),
    # and verified domains are re-checked now and then so a removed DKIM record is noticed. The run only queues
    # bounded per-domain checks; a run left in the queue past the next one is useless.
    "check-sender-domains": {
        "task": "domains.tasks.domains_check_due",
        "schedule": timedelta(minutes=5),
        "options": {"expires": 4 * 60},
    },
    # Delivery: rows claimed by a worker that died go back to the queue, and queued rows whose task never
    # reached a worker (broker down when they were accepted) are published again. Accepted email is never lost.
    "sweep-emails": {
        "task": "messaging.tasks.sweep_emails_task",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 50},
    },
    # Tracking: opens and clicks queued in Redis are drained by a task the first hit schedules; this catches hits
    # whose task was lost (broker down, worker killed).
    "drain-tracking-hits": {
        "task": "messaging.tasks.drain_tracking_hits_task",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 50},
    },
    # Segments: recompute tracked dynamic segments (entry/exit events) and refresh every cached member count, in
    # bounded batches, stalest first; each segment is claimed, so two runs never work on the same one.
    "refresh-segments": {
        "task": "segments.tasks.segments_refresh_due_task",
        "schedule": timedelta(minutes=5),
        "options": {"expires": 4 * 60},
    },
    # Campaigns: scheduled campaigns live in the database and start within a minute of their time (each claimed
    # under its row lock, so overlapping runs never start one twice); SENDING campaigns whose emails are all
    # terminal become SENT. A run left in the queue past the next one is useless.
    "start-due-campaigns": {
        "task": "campaigns.tasks.campaigns_start_due_task",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 50},
    },
    "finish-sending-campaigns": {
        "task": "campaigns.tasks.campaigns_finish_sending_task",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 50},
    },
    # Workflows: executions whose DELAY, timeout or webhook retry came, whose worker died mid-step (lease over) or
    # whose task the broker lost are published again; the resume times live in the database, so this alone resumes
    # every waiting execution after a broker or worker restart (ETA tasks only make it prompter). Every 15 s: a
    # DELAY ends at most that late when its ETA task is lost.
    "sweep-workflow-executions": {
        "task": "workflows.tasks.sweep_executions_task",
        "schedule": timedelta(seconds=15),
        "options": {"expires": 14},
    },
    # Retention (config/retention.py): rendered bodies, provider webhook receipts, expired idempotency keys,
    # finished jobs and their uploads, and (when turned on) old events and email rows. Every rule works in short
    # batches, at most RETENTION_MAX_BATCHES per rule and run, so a run never holds locks for long; a backlog (first
    # run, long outage) drains over successive runs. Hourly is often enough for ages counted in hours and days.
    "apply-retention": {
        "task": "config.tasks.apply_retention_task",
        "schedule": timedelta(hours=1),
        "options": {"expires": 50 * 60},
    },
    # Partitioned history (PostgreSQL, docs/scaling.md "Partitioned history"): the months ahead of the
    # partitioned tables exist before a row needs them; an insert with no partition for its month would fail.
    # Daily, a few months ahead: weeks of failed runs still leave every row a partition, and the doctor says so.
    "ensure-partitions": {
        "task": "config.tasks.ensure_partitions_task",
        "schedule": timedelta(days=1),
        "options": {"expires": 23 * 60 * 60},
    },
}
