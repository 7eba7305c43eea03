import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
django_application = get_wsgi_application()

# The busiest requests are answered in front of Django when they succeed (each module says why); everything else,
# and every request they decline, goes to Django. Imported after the apps are loaded.
from accounts.http.fastroute import FastRoute, with_fast_routes  # noqa: E402
from messaging.engagement.wsgi import with_tracking_routes  # noqa: E402

# Each route is its view's (contacts TrackView, messaging SendView), taken from the URL map.
FAST_ROUTES = [FastRoute.at("/v1/track"), FastRoute.at("/v1/send")]
application = with_fast_routes(with_tracking_routes(django_application), FAST_ROUTES)

# Everything loaded so far lives as long as the process: keep it out of the cycle collector's scans, which otherwise
# walk these ~130,000 objects again and again (10-20 % of the CPU of a /v1/track request).
gc.freeze()
