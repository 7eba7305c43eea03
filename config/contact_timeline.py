"""A contact's page in the console (/admin/contacts/contact/<id>/timeline/): its data, its subscription, the segments
it is a member of, and its timeline (`messaging.insights.timeline`), newest first, a window at a time.

The contacts app knows nothing of emails, segments or workflows, so the page is composed here: the contact admin is
registered again with the page's URL and a link to it on every row of the list; the change page links to it from
its own template (`admin/contacts/contact/change_form.html`).
"""

import json
from dataclasses import dataclass
from datetime import datetime

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from contacts.admin import ContactAdmin
from contacts.models import Contact
from contacts.selectors import contact_subscribed_since
from core.errors import BadRequest
from messaging.insights.registry import ActivityItem
from messaging.insights.timeline import TIMELINE_PAGE_SIZE, TIMELINE_WINDOW, contact_timeline
from segments.models import SegmentType
from segments.selectors import contact_memberships

MEMBERSHIPS_SHOWN = 100
SUMMARY_CHARS = 160
# The activity types in words; a type not named here is shown as it is.
LABELS = {
    "email.sent": "Email sent",
    "email.delivered": "Email delivered",
    "email.opened": "Email opened",
    "email.clicked": "Email clicked",
    "email.bounced": "Email bounced",
    "email.complained": "Complaint",
    "email.failed": "Email failed",
    "email.received": "Email received",
    "contact.subscribed": "Subscribed",
    "contact.unsubscribed": "Unsubscribed",
    "workflow.started": "Workflow started",
    "workflow.completed": "Workflow finished",
    "workflow.refused": "Workflow refused",
}
# What tells an email event apart on one line; the rest of its data (ids, the sender) is on the email's page.
EMAIL_EVENT_FIELDS = ("subject", "link", "bounceType", "error", "from")


@dataclass(frozen=True)
class Row:
    """One line of the timeline as the page shows it: what happened, in words, and the record it links to."""

    id: str
    at: datetime
    what: str
    details: str
    link: str | None
    link_text: str


def summary(data: dict) -> str:
    """`key: value` pairs of a JSON object on one line, cut at SUMMARY_CHARS."""
    text = ", ".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in data.items())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def readable(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _email_link(item: ActivityItem) -> tuple[str | None, str]:
    if item.email_id is None:
        return None, ""
    return reverse("admin:messaging_email_change", args=[item.email_id]), "Email"


def _workflow_link(item: ActivityItem) -> tuple[str, str]:
    if item.type == "workflow.refused":
        return reverse("admin:workflows_refusedstart_change", args=[item.id]), "Refusal"
    return reverse("admin:workflows_workflowexecution_change", args=[item.id]), "Execution"


def row(item: ActivityItem) -> Row:
    """What the page says of an item: the kind in words, the details that tell it apart, the record it is about."""
    meta = item.metadata
    what = LABELS.get(item.type, item.type)
    link, link_text = _email_link(item)
    if item.type == "email":
        what = f"Email ({meta['source']})"
        details = f"{meta['subject']}: {meta['status']}, {meta['opens']} open(s), {meta['clicks']} click(s)"
    elif item.type == "event.triggered":
        what, details = f"Event {meta['eventName']}", summary(meta["eventData"])
    elif item.type.startswith("segment."):
        what = "Entered segment" if item.type.endswith("entry") else "Left segment"
        details = meta["eventData"].get("segmentName") or meta["eventName"]
    elif item.type.startswith("email."):
        details = summary({key: meta[key] for key in EMAIL_EVENT_FIELDS if meta.get(key)})
    elif item.type.startswith("workflow."):
        step = item.detail.get("currentStep")
        details = f"{meta['workflowName']}: {meta.get('status') or meta.get('reason')}"
        details += f", at step {step}" if step else ""
        link, link_text = _workflow_link(item)
    else:
        details = summary({key: value for key, value in meta.items() if value not in (None, "", [], {})})
    return Row(id=str(item.id), at=item.timestamp, what=what, details=details, link=link, link_text=link_text)


class ContactTimelineAdmin(ContactAdmin):
    list_display = [*ContactAdmin.list_display, "timeline_link"]

    @admin.display(description="timeline")
    def timeline_link(self, contact: Contact) -> str:
        url = reverse("admin:contacts_contact_timeline", args=[contact.pk])
        return format_html('<a href="{}">Timeline</a>', url)

    def get_urls(self):
        timeline = path(
            "<uuid:contact_id>/timeline/",
            self.admin_site.admin_view(self.timeline_view),
            name="contacts_contact_timeline",
        )
        return [timeline, *super().get_urls()]

    def timeline_view(self, request, contact_id):
        if not self.has_view_permission(request):
            raise PermissionDenied
        contact = get_object_or_404(Contact.objects.select_related("project"), pk=contact_id)
        try:
            page = contact_timeline(contact=contact, cursor=request.GET.get("cursor") or None)
        except BadRequest:
            messages.warning(request, "That page of the timeline is not valid: here are the newest items.")
            page = contact_timeline(contact=contact)
        memberships = contact_memberships(contact=contact, limit=MEMBERSHIPS_SHOWN + 1)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Timeline of {contact.email}",
            "contact": contact,
            "subscribed_since": contact_subscribed_since(contact=contact),
            "data": [(key, readable(value)) for key, value in sorted(contact.data.items())],
            "memberships": [
                (membership, "static" if membership.segment.type == SegmentType.STATIC else "dynamic, tracked")
                for membership in memberships[:MEMBERSHIPS_SHOWN]
            ],
            "memberships_cut": len(memberships) > MEMBERSHIPS_SHOWN,
            "memberships_shown": MEMBERSHIPS_SHOWN,
            "page": page,
            "older_page": bool(request.GET.get("cursor")),
            "rows": [row(item) for item in page.items],
            "page_size": TIMELINE_PAGE_SIZE,
            "window_days": TIMELINE_WINDOW.days,
        }
        return TemplateResponse(request, "admin/contacts/contact/timeline.html", context)


def register(site: admin.AdminSite) -> None:
    site.unregister(Contact)
    site.register(Contact, ContactTimelineAdmin)
