from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts.models import IdempotencyRecord, Job, Membership, Project, User
from accounts.services import project_auth_changed, project_disable, project_enable, project_regenerate_keys


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "name", "is_staff", "is_active", "date_joined"]
    list_filter = ["is_staff", "is_active"]
    search_fields = ["email", "name"]
    fieldsets = [
        (None, {"fields": ["email", "name", "password"]}),
        ("Permissions", {"fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "id",
        "disabled",
        "disabled_reason",
        "tracking_mode",
        "public_key",
        "secret_key_hint",
        "created_at",
    ]
    list_filter = ["disabled", "disabled_reason", "tracking_mode"]
    search_fields = ["name", "id", "public_key"]
    readonly_fields = ["id", "public_key", "secret_key_hint", "keys_rotated_at", "disabled_at", "created_at"]
    exclude = ["secret_key_hash"]
    inlines = [MembershipInline]
    actions = ["disable_projects", "enable_projects", "regenerate_keys"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        project_auth_changed(project=obj)

    def delete_model(self, request, obj):
        project_auth_changed(project=obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for project in queryset:
            project_auth_changed(project=project)
        super().delete_queryset(request, queryset)

    @admin.action(description="Disable selected projects")
    def disable_projects(self, request, queryset):
        for project in queryset:
            project_disable(project=project, reason="OPERATOR")
        self.message_user(request, f"Disabled {queryset.count()} project(s)")

    @admin.action(description="Enable selected projects")
    def enable_projects(self, request, queryset):
        for project in queryset:
            project_enable(project=project)
        self.message_user(request, f"Enabled {queryset.count()} project(s)")

    @admin.action(description="Regenerate API keys (old keys stop working at once)")
    def regenerate_keys(self, request, queryset):
        for project in queryset:
            keys = project_regenerate_keys(project=project)
            # The only moment the new secret key exists in clear text: show it to the operator who asked.
            self.message_user(
                request,
                f"{project.name}: public {keys.public_key}, secret {keys.secret_key} (shown once)",
                level=messages.WARNING,
            )


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "project__name"]
    list_select_related = ["user", "project"]
    raw_id_fields = ["user", "project"]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):
    list_display = ["key", "project", "method", "path", "status_code", "created_at", "expires_at"]
    list_filter = ["method", "status_code"]
    search_fields = ["key", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    date_hierarchy = "created_at"


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "type", "status", "progress", "created_at", "started_at", "finished_at"]
    list_filter = ["type", "status"]
    search_fields = ["id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    readonly_fields = ["params", "result", "error", "created_at", "started_at", "finished_at"]
