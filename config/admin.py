"""The beat lease is shown (read only), the contact admin gains its timeline page (config/contact_timeline.py),
admin actions of the libraries' admins (django-axes, django-celery-beat) need the change permission, and every change
list reads from the replica when there is one (`core.admin.ReplicaListsMixin`).

Django offers an action to anyone who may see the change list unless the action declares `allowed_permissions`.
Herald's own actions each declare theirs; this module, loaded last by the admin's autodiscovery (`config` is the
last installed app), re-registers every admin whose actions do not, with copies of those actions that ask for the
change permission. `config/tests/test_admin_actions.py` walks every action of the site as a view-only user.
"""

import functools

from django.contrib import admin

from config import contact_timeline
from config.leases import lease_annotated
from config.models import Lease
from core.admin import RecordAdmin, ReplicaListsMixin


@admin.register(Lease)
class LeaseAdmin(RecordAdmin):
    """Which celery-beat schedules (docs/operations.md "Beat"): read here, changed by the beats alone. Expiry is
    judged on the database's clock, as the beats judge it."""

    list_display = ["name", "host", "pid", "acquired_at", "renewed_at", "expires_at", "expired"]
    fields = ["name", "holder", "host", "pid", "acquired_at", "renewed_at", "expires_at", "expired"]
    readonly_fields = fields

    def get_queryset(self, request):
        return lease_annotated(super().get_queryset(request))

    @admin.display(boolean=True, description="expired")
    def expired(self, lease):
        return lease.expired


def _gated(action):
    """A copy of a library's action that Django offers only to users who may change the model."""

    @functools.wraps(action)
    def gated(model_admin, request, queryset):
        return action(model_admin, request, queryset)

    gated.allowed_permissions = ("change",)
    return gated


def _require_change_for_actions(site: admin.AdminSite) -> None:
    for model, model_admin in list(site._registry.items()):
        admin_class = type(model_admin)
        ungated = {
            name: _gated(getattr(admin_class, name))
            for name in admin_class.actions or ()
            if isinstance(name, str) and not getattr(getattr(admin_class, name), "allowed_permissions", None)
        }
        if ungated:
            site.unregister(model)
            site.register(model, type(admin_class.__name__, (admin_class,), ungated))


def _lists_from_replica(site: admin.AdminSite) -> None:
    for model, model_admin in list(site._registry.items()):
        admin_class = type(model_admin)
        if not issubclass(admin_class, ReplicaListsMixin):
            site.unregister(model)
            site.register(model, type(admin_class.__name__, (ReplicaListsMixin, admin_class), {}))


contact_timeline.register(admin.site)
_require_change_for_actions(admin.site)
_lists_from_replica(admin.site)
