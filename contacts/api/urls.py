from django.urls import path

from contacts.api.views import ContactImportViewSet, ContactViewSet, EventViewSet, TrackView

contacts = ContactViewSet.as_view
events = EventViewSet.as_view
FIELD = "<str:field>"

# Fixed paths before parameterised ones: /contacts/fields is not a contact id, /events/stats not an event name.
urlpatterns = [
    path("v1/track", TrackView.as_view(), name="v1-track"),
    path("contacts", contacts({"get": "list", "post": "create"}), name="contact-list"),
    path("contacts/lookup", contacts({"post": "lookup"}), name="contact-lookup"),
    path("contacts/fields", contacts({"get": "fields"}), name="contact-fields"),
    path(f"contacts/fields/{FIELD}/values", contacts({"get": "field_values"}), name="contact-field-values"),
    path(f"contacts/fields/{FIELD}/usage", contacts({"get": "field_usage"}), name="contact-field-usage"),
    path(f"contacts/fields/{FIELD}", contacts({"delete": "field_delete"}), name="contact-field"),
    path("contacts/import", ContactImportViewSet.as_view({"post": "import_csv"}), name="contact-import"),
    path("contacts/import/<str:job_id>", contacts({"get": "import_status"}), name="contact-import-status"),
    path("contacts/bulk-subscribe", contacts({"post": "bulk_subscribe"}), name="contact-bulk-subscribe"),
    path("contacts/bulk-unsubscribe", contacts({"post": "bulk_unsubscribe"}), name="contact-bulk-unsubscribe"),
    path("contacts/bulk-delete", contacts({"post": "bulk_delete"}), name="contact-bulk-delete"),
    path("contacts/bulk/<str:job_id>", contacts({"get": "bulk_status"}), name="contact-bulk-status"),
    path(
        "contacts/<str:pk>",
        contacts({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="contact-detail",
    ),
    path("events", events({"get": "list"}), name="event-list"),
    path("events/track", events({"post": "track"}), name="event-track"),
    path("events/stats", events({"get": "stats"}), name="event-stats"),
    path("events/names", events({"get": "names"}), name="event-names"),
    path("events/contact/<str:contact_id>", events({"get": "of_contact"}), name="event-contact"),
    path("events/<str:event_name>/usage", events({"get": "usage"}), name="event-usage"),
    path("events/<str:event_name>", events({"delete": "delete_by_name"}), name="event-name"),
]
