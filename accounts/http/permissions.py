from rest_framework.permissions import BasePermission


class HasProject(BasePermission):
    """Passes when a key identified a project; DRF then answers a request with no key 401 MISSING_AUTH."""

    def has_permission(self, request, view) -> bool:
        return request.auth is not None
