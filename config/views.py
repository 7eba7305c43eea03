"""Unauthenticated service endpoints: `/config` for clients, `/health` for load balancers and operators."""

import logging

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config import probes
from config.api.views import PublicApiView

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
                    "authProviders": {
                        "github": bool(getattr(settings, "GITHUB_OAUTH_CLIENT_ID", "")),
                        "google": bool(getattr(settings, "GOOGLE_OAUTH_CLIENT_ID", "")),
                    },
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
        checks = {"database": _check("database", probes.database), "cache": _check("cache", probes.cache_roundtrip)}
        checks["broker"] = _check("broker", probes.broker)
        failing = [name for name, state in checks.items() if state != "ok"]
        if failing:
            return Response({"status": "error", "checks": checks, "failing": failing}, status=503)
        return Response({"status": "ok", "checks": checks})
