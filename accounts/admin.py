from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.db.models import Count

from accounts.identity.invitations import invitation_withdraw
from accounts.identity.mail import AccountEmail, account_email_queue
from accounts.models import IdempotencyRecord, Invitation, Job, Membership, Project, User
from accounts.tenancy.services import project_auth_changed, project_disable, project_enable, project_regenerate_keys
from core.admin import RecordAdmin
from core.counts import EstimatedCountPaginator


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = [
        "email",
        "name",
        "email_verified",
        "project_count",
        "is_staff",
        "is_active",
        "last_login",
        "date_joined",
    ]
    list_filter = ["is_staff", "is_active", ("email_verified_at", admin.EmptyFieldListFilter), "memberships__role"]
    search_fields = ["email", "name", "memberships__project__name"]
    fieldsets = [
        (None, {"fields": ["email", "name", "password"]}),
        ("Permissions", {"fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
        ("Dates", {"fields": ["last_login", "date_joined", "email_verified_at"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]
    actions = ["send_password_reset", "send_verification"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(project_total=Count("memberships", distinct=True))

    @admin.display(boolean=True, description="verified", ordering="email_verified_at")
    def email_verified(self, user) -> bool:
        return user.email_verified

    @admin.display(description="projects", ordering="project_total")
    def project_count(self, user) -> int:
        return user.project_total

    @admin.action(description="Email a password reset link", permissions=("change",))
    def send_password_reset(self, request, queryset):
        for user in queryset:
            account_email_queue(kind=AccountEmail.RESET_PASSWORD, object_id=user.pk)
        self.message_user(request, f"Reset links queued for {queryset.count()} user(s)")

    @admin.action(description="Email a new verification link (unverified addresses only)", permissions=("change",))
    def send_verification(self, request, queryset):
        for user in queryset.filter(email_verified_at__isnull=True):
            account_email_queue(kind=AccountEmail.VERIFY_EMAIL, object_id=user.pk)
        self.message_user(request, "Verification links queued")


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


class InvitationInline(admin.TabularInline):
    model = Invitation
    extra = 0
    raw_id_fields = ["invited_by"]


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
    inlines = [MembershipInline, InvitationInline]
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

    @admin.action(description="Disable selected projects", permissions=("change",))
    def disable_projects(self, request, queryset):
        for project in queryset:
            project_disable(project=project, reason="OPERATOR")
        self.message_user(request, f"Disabled {queryset.count()} project(s)")

    @admin.action(description="Enable selected projects", permissions=("change",))
    def enable_projects(self, request, queryset):
        for project in queryset:
            project_enable(project=project)
        self.message_user(request, f"Enabled {queryset.count()} project(s)")

    @admin.action(description="Regenerate API keys (old keys stop working at once)", permissions=("change",))
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
    search_fields = ["user__email", "project__name", "project__id"]
    list_select_related = ["user", "project"]
    raw_id_fields = ["user", "project"]
    date_hierarchy = "created_at"


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations of addresses without an account; withdrawing (or deleting) one makes its links stop working."""

    list_display = ["email", "project", "role", "invited_by", "created_at", "expires_at"]
    list_filter = ["role"]
    search_fields = ["email", "project__name", "project__id"]
    list_select_related = ["project", "invited_by"]
    raw_id_fields = ["project", "invited_by"]
    date_hierarchy = "created_at"
    actions = ["resend", "withdraw"]

    @admin.action(description="Send the invitation email again", permissions=("change",))
    def resend(self, request, queryset):
        for invitation in queryset:
            account_email_queue(kind=AccountEmail.INVITATION, object_id=invitation.pk)
        self.message_user(request, f"Invitations queued for {queryset.count()} address(es)")

    # Withdrawing deletes the invitation: the permission to delete it.
    @admin.action(description="Withdraw the invitations (their links stop working)", permissions=("delete",))
    def withdraw(self, request, queryset):
        invitations = list(queryset.select_related("project"))
        for invitation in invitations:
            invitation_withdraw(project=invitation.project, invitation_id=invitation.pk)
        self.message_user(request, f"Withdrew {len(invitations)} invitation(s)")


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(RecordAdmin):
    list_display = ["key", "project", "method", "path", "status_code", "created_at", "expires_at"]
    list_filter = ["method", "status_code"]
    search_fields = ["key", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    date_hierarchy = "created_at"
    paginator = EstimatedCountPaginator
    show_full_result_count = False


@admin.register(Job)
class JobAdmin(RecordAdmin):
    list_display = ["id", "project", "type", "status", "progress", "created_at", "started_at", "finished_at"]
    list_filter = ["type", "status"]
    search_fields = ["=id", "project__name"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    readonly_fields = ["params", "result", "error", "created_at", "started_at", "finished_at"]
