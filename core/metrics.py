"""The service's Prometheus metrics that processes count as they work (the figures read from the database at scrape
time are `config.metrics`' own).

With PROMETHEUS_MULTIPROC_DIR set in the environment of every process of a host (gunicorn's workers, Celery's
pool), prometheus-client writes each process's values to files there and one scrape of any web process adds them
all up; without it, each process counts for itself alone.
"""

import os

from prometheus_client import Counter, Histogram, disable_created_metrics, multiprocess

# A `_created` series per labelled child doubles the exposition for a figure no dashboard uses.
disable_created_metrics()

REQUEST_DURATION = Histogram(
    "herald_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template (never the raw path), method and status.",
    ["route", "method", "status"],
)
DELIVERY_LATENCY = Histogram(
    "herald_email_delivery_latency_seconds",
    "From an email's acceptance (queued) to its handover to the mail server (sent).",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600, float("inf")),
)
# The SMTP edge (messaging.smtp): each message a listener answered, by listener (submission, inbound), outcome
# (accepted, refused, received, report) and, for a refusal, its reason (auth, sender, size, parse, cap, ...).
SMTP_MESSAGES = Counter(
    "herald_smtp_messages",
    "Messages the SMTP listeners answered, by listener, outcome and reason of a refusal.",
    ["listener", "outcome", "reason"],
)
TASK_FAILURES = Counter("herald_task_failures", "Celery tasks that raised, by task name.", ["task"])


def multiprocess_mode() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def process_exited(pid: int) -> None:
    """Forget the live-only values of a process that exited (its counts stay in the totals)."""
    if multiprocess_mode():
        multiprocess.mark_process_dead(pid)
