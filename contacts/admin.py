"""Admin for contacts and events: big tables, so no exact COUNT(*) on change lists, and writes through services.

Import and bulk jobs are `accounts.Job` rows (type CONTACT_IMPORT, BULK_*), shown with their progress by the Job
admin in accounts.
"""

import json

from django.contrib import admin
from django.utils.html import format_html

from contacts.models import Contact, Event
from contacts.services import contact_update, contacts_subscription_bulk_set
from core.admin import RecordAdmin
from core.counts import EstimatedCountPaginator


def _pretty(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


@admin.register(Contact)
class ContactAdmin(admin.ModelAdmin):
    list_display = ["email", "project", "subscribed", "snoozed_until", "created_at", "updated_at"]
    list_filter = ["subscribed"]
    search_fields = ["email"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]
    fields = ["id", "project", "email", "subscribed", "snoozed_until", "data_readable", "created_at", "updated_at"]
    readonly_fields = ["id", "project", "email", "snoozed_until", "data_readable", "created_at", "updated_at"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    ordering = ["-created_at"]
    actions = ["subscribe", "unsubscribe"]

    @admin.display(description="data")
    def data_readable(self, contact: Contact) -> str:
        return _pretty(contact.data)

    def get_search_results(self, request, queryset, search_term):
        # Emails are stored lower-cased: a LIKE on the lower-cased term uses the trigram index (ILIKE would not).
        term = search_term.strip().lower()
        if not term:
            return queryset, False
        return queryset.filter(email__contains=term), False

    def has_add_permission(self, request) -> bool:
        # Contacts come from the API, imports and sends, which apply the data rules.
        return False

    def save_model(self, request, obj, form, change):
        # Only `subscribed` is editable here; the service records the subscription event.
        subscribed = obj.subscribed
        obj.subscribed = form.initial.get("subscribed", subscribed)
        contact_update(contact=obj, subscribed=subscribed)

    def _set_subscription(self, request, queryset, subscribed: bool) -> None:
        changed = 0
        by_project: dict = {}
        for contact in queryset.select_related("project")[:10_000]:
            by_project.setdefault(contact.project_id, []).append(contact)
        for contacts in by_project.values():
            changed += len(
                contacts_subscription_bulk_set(
                    project=contacts[0].project, contacts=contacts, subscribed=subscribed, source="admin"
                )
            )
        self.message_user(request, f"{changed} contact(s) changed")

    @admin.action(description="Subscribe selected contacts", permissions=("change",))
    def subscribe(self, request, queryset):
        self._set_subscription(request, queryset, True)

    @admin.action(description="Unsubscribe selected contacts", permissions=("change",))
    def unsubscribe(self, request, queryset):
        self._set_subscription(request, queryset, False)


@admin.register(Event)
class EventAdmin(RecordAdmin):
    list_display = ["name", "contact", "project", "email_id", "created_at"]
    search_fields = ["=name", "=contact__email"]
    list_select_related = ["contact", "project"]
    raw_id_fields = ["contact", "project"]
    fields = ["id", "project", "contact", "name", "email_id", "data_readable", "created_at"]
    readonly_fields = fields
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    ordering = ["-created_at"]

    @admin.display(description="data")
    def data_readable(self, event: Event) -> str:
        return _pretty(event.data)
