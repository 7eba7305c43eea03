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
