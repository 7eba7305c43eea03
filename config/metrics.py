"""`GET /metrics`: the Prometheus exposition, for a scraper holding METRICS_TOKEN.

Two kinds of figures: what the processes count as they work (`core.metrics`: request durations, delivery latency,
task failures), and what the database and the queues hold at scrape time (the dashboard's bounded reads: queue
depths, emails of the last hour by status, overdue work, disabled projects).
"""

import hmac
import logging
import time

from django.conf import settings
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from accounts.http.authentication import bearer_token
from config.dashboard import RECENT, emails_by_status_since, projects_disabled_by_reputation
from config.doctor import overdue_work, queue_depths
from config.leases import BEAT_LEASE, lease_get
from core.counts import capped_count
from core.errors import ErrorCode
from core.http.exceptions import error_json_response, route_not_found_response
from core.metrics import REQUEST_DURATION, multiprocess_mode
from messaging.models import Email

logger = logging.getLogger(__name__)
# Any other method is labelled "other": a client must not be able to add label values at will.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsMiddleware:
    """Times every request Django answers, labelled by the route template it resolved to ("unmatched" for none),
    never the raw path, so that the number of series stays that of the URL map. The routes answered in front of
    Django (config.wsgi) time themselves the same way."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = request.resolver_match
        route = match.route if match is not None and match.url_name != "route-not-found" else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        # Positional labels: half the cost of keywords.
        REQUEST_DURATION.labels(route, method, str(response.status_code)).observe(time.perf_counter() - started)
        return response


class DatabaseFigures:
    """The figures read at scrape time, each as bounded as on the dashboard. When they cannot be read (the database
    gone), the scrape still answers, with the processes' counts and `herald_figures_up 0`."""

    def collect(self):
        try:
            families = list(self._families())
        except Exception:
            logger.warning("Metrics: the database figures could not be read", exc_info=True)
            families = []
        yield from families
        yield GaugeMetricFamily(
            "herald_figures_up", "Whether the database figures were read.", value=int(bool(families))
        )

    def _families(self):
        queues = GaugeMetricFamily("herald_queue_depth", "Work waiting, by queue (tables capped).", labels=["queue"])
        for name, depth in queue_depths().items():
            if isinstance(depth, int):
                queues.add_metric([name], depth)
        yield queues
        emails = GaugeMetricFamily(
            "herald_emails_last_hour", "Emails accepted in the last hour, by status.", labels=["status"]
        )
        by_status = emails_by_status_since(timezone.now() - RECENT)
        for status in Email.Status.values:
            emails.add_metric([status], by_status.get(status, 0))
        yield emails
        overdue = GaugeMetricFamily(
            "herald_overdue_work", "Work past its time that a sweeper should have taken (capped).", labels=["kind"]
        )
        for kind, rows in overdue_work().items():
            overdue.add_metric([kind], capped_count(rows))
        yield overdue
        yield GaugeMetricFamily(
            "herald_projects_disabled_by_reputation",
            "Projects the reputation guard disabled.",
            value=capped_count(projects_disabled_by_reputation()),
        )
        lease = lease_get(name=BEAT_LEASE)
        if lease is not None and lease.renewed_at is not None:
            # On the database's clock, as the beats judge the lease: above BEAT_LEASE_SECONDS, no beat schedules.
            yield GaugeMetricFamily(
                "herald_beat_lease_age_seconds",
                "Seconds since the scheduling celery-beat last renewed its lease.",
                value=(lease.now - lease.renewed_at).total_seconds(),
            )


def metrics_exposition() -> bytes:
    """This process's counts, or with PROMETHEUS_MULTIPROC_DIR the sum over every process of the host; then the
    database figures."""
    figures = CollectorRegistry(auto_describe=False)
    figures.register(DatabaseFigures())
    if multiprocess_mode():
        processes = CollectorRegistry()
        MultiProcessCollector(processes)
    else:
        processes = REGISTRY
    return generate_latest(processes) + generate_latest(figures)


def _token_matches(request) -> bool:
    token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
    return token is not None and hmac.compare_digest(token.encode(), settings.METRICS_TOKEN.encode())


@require_GET
def metrics_view(request):
    """404 (as any unknown route) while METRICS_TOKEN is unset; 401 without the token."""
    if not settings.METRICS_TOKEN:
        return route_not_found_response(request)
    if not _token_matches(request):
        response = error_json_response(401, ErrorCode.UNAUTHORIZED, "Send the metrics token as a Bearer token")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_exposition(), content_type=CONTENT_TYPE_LATEST)
