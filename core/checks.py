"""System checks for configuration that works but is unsafe in production (run by `manage.py check`)."""

from django.conf import settings
from django.core.checks import Warning, register


@register(deploy=False)
def production_settings(app_configs, **kwargs):
    if settings.DEBUG:
        return []
    problems = []
    if not settings.PUBLIC_URL.startswith("https://"):
        problems.append(
            Warning(
                "PUBLIC_URL is not https: unsubscribe and tracking links in emails will be sent in clear text.",
                hint="Set PUBLIC_URL=https://<your host>.",
                id="herald.W001",
            )
        )
    return problems


@register()
def delivery_lease(app_configs, **kwargs):
    """The delivery lease (messaging.sending.delivery) must outlast one message, and expire soon enough for another
    worker to send a dead one's mail within 5 minutes (docs/messaging.md; the sweeper runs every minute)."""
    lease, timeout = settings.DELIVERY_LEASE_SECONDS, settings.EMAIL_TIMEOUT
    problems = []
    if timeout and lease < 4 * timeout:
        problems.append(
            Warning(
                f"DELIVERY_LEASE_SECONDS ({lease:g}) is under 4 x EMAIL_TIMEOUT ({timeout}): one message to a slow "
                "relay can outlast the lease, and another worker send it again.",
                hint="Raise DELIVERY_LEASE_SECONDS or lower EMAIL_TIMEOUT.",
                id="herald.W003",
            )
        )
    if lease > 240:
        problems.append(
            Warning(
                f"DELIVERY_LEASE_SECONDS ({lease:g}) is over 240: the mail of a worker that died waits more than 5 "
                "minutes for another.",
                hint="Leases are renewed while a worker sends; a long one only delays the take-over.",
                id="herald.W004",
            )
        )
    return problems


@register(deploy=True)
def admin_host_alone(app_configs, **kwargs):
    """ADMIN_HOST compares the request's Host header, which a client writes: without ADMIN_NETWORKS, the admin stays
    confined only if the proxy in front refuses other host names (docs/security.md, "The operators' part")."""
    if settings.ADMIN_HOST and not settings.ADMIN_NETWORKS:
        return [
            Warning(
                "ADMIN_HOST is set without ADMIN_NETWORKS: a client that sends `Host: "
                f"{settings.ADMIN_HOST}` reaches /admin/ unless the proxy refuses host names other than its own.",
                hint="Set ADMIN_NETWORKS to the networks operators come from (e.g. 10.0.0.0/8).",
                id="herald.W005",
            )
        ]
    return []
