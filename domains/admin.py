from django.contrib import admin

from domains.models import Domain


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "status", "verification_method", "verified_at", "created_at"]
    list_filter = ["status", "verification_method"]
    search_fields = ["name", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
