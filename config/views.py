"""Unauthenticated service endpoints: `/config` for clients, `/health` for load balancers and operators."""

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from accounts.users import oauth_providers
from config.api.views import PublicApiView
from config.celery import app as celery_app

logger = logging.getLogger(__name__)


def email_provider_name(backend: str) -> str:
    """A short name for the configured Django email backend: `smtp`, `file`, or the anymail provider."""
    parts = backend.split(".")
    if parts[0] == "anymail" and len(parts) > 2:
        return parts[2]
    return {"smtp": "smtp", "filebased": "file", "console": "console", "locmem": "memory", "dummy": "none"}.get(
        parts[-2] if len(parts) > 1 else backend, backend
    )


class ConfigView(PublicApiView):
    @extend_schema(
        summary="Feature flags of the running configuration",
        responses=inline_serializer("ServiceConfig", {"environment": serializers.CharField()}),
    )
    def get(self, request):
        provider = email_provider_name(settings.EMAIL_BACKEND)
        return Response(
            {
                "environment": settings.ENVIRONMENT,
                "urls": {"api": settings.API_URL, "public": settings.PUBLIC_URL},
                "features": {
                    "billing": {"enabled": bool(getattr(settings, "BILLING_PROVIDER", ""))},
                    "storage": {"s3Enabled": bool(getattr(settings, "S3_BUCKET", ""))},
                    "authProviders": oauth_providers(),
                    "signup": {"signupsDisabled": settings.SIGNUPS_DISABLED},
                    "email": {"provider": provider, "trackingToggleEnabled": True},
                    "smtp": {"enabled": provider == "smtp"},
                },
            }
        )


def _check(name: str, probe) -> str:
    try:
        probe()
    except Exception as exc:
        logger.warning("Health check %s failed: %s", name, exc)
        return "error"
    return "ok"


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _cache() -> None:
    cache.set("health:probe", "1", 10)
    if cache.get("health:probe") != "1":
        raise RuntimeError("cache did not return the probe value")


def _broker() -> None:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)


class HealthView(PublicApiView):
    rate_limited = False

    @extend_schema(
        summary="Database, cache and broker status",
        responses={
            200: inline_serializer("Health", {"status": serializers.CharField(), "checks": serializers.DictField()}),
            503: inline_serializer("HealthFailing", {"status": serializers.CharField()}),
        },
    )
    def get(self, request):
        checks = {"database": _check("database", _database), "cache": _check("cache", _cache)}
        checks["broker"] = _check("broker", _broker)
        failing = [name for name, state in checks.items() if state != "ok"]
        if failing:
            return Response({"status": "error", "checks": checks, "failing": failing}, status=503)
        return Response({"status": "ok", "checks": checks})
