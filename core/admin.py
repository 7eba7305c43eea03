"""What every app's admin builds on."""

from django.contrib import admin
from django.contrib.auth import get_permission_codename

from core.replica import replica_reads


class ReplicaListsMixin:
    """A change list shown (GET) reads from the replica when there is one (docs/scaling.md, "Read replica"): it may be
    seconds behind. Its actions and list edits (POST), and the change pages, which edit, read the primary."""

    def changelist_view(self, request, extra_context=None):
        if request.method != "GET":
            return super().changelist_view(request, extra_context)
        with replica_reads():
            response = super().changelist_view(request, extra_context)
            # The page's rows are a lazy queryset until the template runs: render it here, inside the scope.
            if hasattr(response, "render"):
                response.render()
        return response


class RecordAdmin(admin.ModelAdmin):
    """A page of records: what happened (emails, events, jobs, executions, provider events). They are read, never
    added, edited or deleted by hand; retention removes them. Their actions (retry, cancel) change state through the
    services and ask for the model's change permission: declare them with `permissions=("act",)`."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_act_permission(self, request):
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.{get_permission_codename('change', opts)}")
