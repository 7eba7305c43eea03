import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
django_application = get_wsgi_application()

from messaging.tracking_wsgi import with_tracking_routes  # noqa: E402 (needs the apps loaded)

application = with_tracking_routes(django_application)
