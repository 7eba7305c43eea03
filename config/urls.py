from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts.pages.views import csrf_refusal
from config.dashboard import dashboard_view
from config.metrics import metrics_view
from config.views import ConfigView, HealthView, favicon, home
from core.errors import ErrorCode
from core.http.exceptions import error_json_response, route_not_found_response, unexpected_error_envelope

admin.site.site_header = "Herald administration"
admin.site.site_title = "Herald admin"
# The admin index links to the operators' dashboard (config/dashboard.py).
admin.site.index_template = "admin/herald_index.html"

urlpatterns = [
    # The busiest routes first (tracking endpoints, /v1/track, /v1/send): Django tries the patterns in order.
    path("", include("messaging.engagement.api.urls")),
    path("", include("contacts.api.urls")),
    path("", include("messaging.urls")),
    path("admin/dashboard/", admin.site.admin_view(dashboard_view), name="admin-dashboard"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("config", ConfigView.as_view(), name="config"),
    path("health", HealthView.as_view(), name="health"),
    path("", home, name="home"),
    path("favicon.ico", favicon, name="favicon"),
    path("metrics", metrics_view, name="metrics"),
    path("", include("accounts.api.urls")),
    path("", include("accounts.pages.urls")),
    path("", include("campaigns.api.urls")),
    path("", include("segments.api.urls")),
    path("", include("workflows.api.urls")),
    path("", include("domains.api.urls")),
    path("", include("accounts.billing.api.urls")),
]


# Exempt from the CSRF check: an unknown route has nothing to protect, and its answer must be the JSON 404 whatever
# the method (a POST would otherwise get Django's HTML "CSRF verification failed" page).
@csrf_exempt
def route_not_found(request, *args, **kwargs):
    return route_not_found_response(request)


# Last: an unknown route answers with the envelope whatever DEBUG is.
urlpatterns.append(re_path(r"^", route_not_found, name="route-not-found"))


def handler404(request, exception=None):
    return route_not_found(request)


def handler500(request):
    return JsonResponse(unexpected_error_envelope(), status=500)


def handler400(request, exception=None):
    return error_json_response(400, ErrorCode.BAD_REQUEST, "Bad request")


def handler403(request, exception=None):
    return error_json_response(403, ErrorCode.FORBIDDEN, "Forbidden")


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: a cookie-authenticated unsafe request without a valid CSRF token, or a form of an account
    page without its token (a page tells the person)."""
    page = csrf_refusal(request)
    if page is not None:
        return page
    return error_json_response(403, ErrorCode.CSRF_FAILED, f"CSRF verification failed: {reason}".rstrip(": "))
