"""Where operators' pages answer, and who is logging in to them."""

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http.request import split_domain_port

from core.http.exceptions import route_not_found_response
from core.ratelimit import client_address


class OperatorHostMiddleware:
    """/admin/ answers only to clients inside ADMIN_NETWORKS and on ADMIN_HOST, when they are set, and is an unknown
    route everywhere else, so the public host does not even show the login page.

    The network is the guard: the client's address is the proxy's own entry (TRUSTED_PROXY_COUNT), which a client
    cannot write. The host name is a client's word unless the proxy refuses other names (deploy/nginx does), so on
    its own it only keeps the admin off the public name (the deploy check herald.W005 says so)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.startswith("/admin/") and not operator_request(request):
            return route_not_found_response(request)
        return self.get_response(request)


def operator_request(request) -> bool:
    networks = admin_networks(tuple(settings.ADMIN_NETWORKS))
    if networks:
        try:
            address = ipaddress.ip_address(client_address(request.META))
        except ValueError:
            return False
        if not any(address in network for network in networks):
            return False
    if settings.ADMIN_HOST:
        host, _ = split_domain_port(request.get_host())
        return host == settings.ADMIN_HOST
    return True


@lru_cache(maxsize=4)
def admin_networks(names: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(name, strict=False) for name in names)


def login_client_address(request) -> str | None:
    """The address admin login lockouts are counted against (django-axes): the API's client address, or None for
    a request without one (a test client's login, a management shell), which is then not counted per address."""
    address = client_address(request.META)
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return None
    return address
