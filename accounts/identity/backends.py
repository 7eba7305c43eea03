"""Authentication backends."""

from axes.backends import AxesStandaloneBackend


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' lockout for logins that come with a request (the admin's login form). Authentication without
    one (a management shell, a test client's `login`) has no client address to throttle, and goes on to the next
    backend unchecked."""

    def authenticate(self, request=None, *args, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)
