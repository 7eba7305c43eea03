"""Where operators' pages answer, and who is logging in to them."""

import ipaddress

from django.conf import settings
from django.http.request import split_domain_port

from core.http.exceptions import route_not_found_response
from core.ratelimit import client_address


class OperatorHostMiddleware:
    """With ADMIN_HOST set, /admin/ answers only on that host (an internal name behind its own access rules), and
    is an unknown route everywhere else, so the public host does not even show the login page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        admin_host = settings.ADMIN_HOST
        if admin_host and request.path_info.startswith("/admin/"):
            host, _ = split_domain_port(request.get_host())
            if host != admin_host:
                return route_not_found_response(request)
        return self.get_response(request)


def login_client_address(request) -> str | None:
    """The address admin login lockouts are counted against (django-axes): the API's client address, or None for
    a request without one (a test client's login, a management shell), which is then not counted per address."""
    address = client_address(request.META)
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return None
    return address
