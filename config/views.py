"""Unauthenticated service endpoints: `/config` for clients, `/health` for load balancers and operators, and the
front page (`/`, with its icon) for a person who opens the service's address."""

import logging
from functools import cache
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from accounts.billing.provider import provider_enabled
from accounts.http.views import PublicApiView
from accounts.identity.oauth import oauth_providers
from config import probes
from config.operators import operator_request

logger = logging.getLogger(__name__)


def email_provider_name(backend: str) -> str:
    """A short name for the configured Django email backend: `smtp`, `file`, or the anymail provider."""
    parts = backend.split(".")
    if parts[0] == "anymail" and len(parts) > 2:
        return parts[2]
    names = {
        "smtp": "smtp",
        "filebased": "file",
        "outbox": "file",
        "console": "console",
        "locmem": "memory",
        "dummy": "none",
    }
    return names.get(parts[-2] if len(parts) > 1 else backend, backend)


def _flag(name: str):
    return inline_serializer(name, {"enabled": serializers.BooleanField()})


class ServiceConfigSerializer(serializers.Serializer):
    environment = serializers.CharField()
    urls = inline_serializer("ServiceUrls", {"api": serializers.CharField(), "public": serializers.CharField()})
    features = inline_serializer(
        "ServiceFeatures",
        {
            "billing": _flag("BillingFeature"),
            "storage": inline_serializer("StorageFeature", {"s3Enabled": serializers.BooleanField()}),
            "authProviders": inline_serializer(
                "AuthProvidersFeature", {"github": serializers.BooleanField(), "google": serializers.BooleanField()}
            ),
            "signup": inline_serializer("SignupFeature", {"signupsDisabled": serializers.BooleanField()}),
            "email": inline_serializer(
                "EmailFeature",
                {"provider": serializers.CharField(), "trackingToggleEnabled": serializers.BooleanField()},
            ),
            "smtp": _flag("SmtpFeature"),
        },
    )


def service_features() -> dict:
    """Each flag from the setting that turns its feature on (docs/billing.md, "What /config says")."""
    provider = email_provider_name(settings.EMAIL_BACKEND)
    return {
        "billing": {"enabled": provider_enabled()},
        "storage": {"s3Enabled": bool(settings.AWS_STORAGE_BUCKET_NAME)},
        "authProviders": oauth_providers(),
        "signup": {"signupsDisabled": settings.SIGNUPS_DISABLED},
        "email": {"provider": provider, "trackingToggleEnabled": settings.TRACKING_TOGGLE_ENABLED},
        "smtp": {"enabled": provider == "smtp"},
    }


class ConfigView(PublicApiView):
    @extend_schema(summary="Feature flags of the running configuration", responses=ServiceConfigSerializer)
    def get(self, request):
        return Response(
            {
                "environment": settings.ENVIRONMENT,
                "urls": {"api": settings.API_URL, "public": settings.PUBLIC_URL},
                "features": service_features(),
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


@require_safe
def home(request):
    """`/` (the admin's "View site" too): what this address is, and links to the API reference, the health report
    and, for whoever may open it, the admin."""
    context = {"version": settings.SPECTACULAR_SETTINGS["VERSION"], "admin": operator_request(request)}
    return render(request, "config/home.html", context)


@cache
def _icon() -> bytes:
    return (Path(__file__).parent / "static" / "config" / "favicon.ico").read_bytes()


@require_safe
def favicon(request):
    response = HttpResponse(_icon(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=604800"
    return response
