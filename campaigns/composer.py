"""The console's campaign form: what an operator composes is the API's input, validated by the API's input serializer
and written by the API's services (`campaign_create`, `campaign_replace`); a refusal is shown at its field."""

import json
import uuid

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.html import escape

from accounts.models import Project
from campaigns.api.serializers import CampaignInputSerializer
from campaigns.models import AudienceType, Campaign
from campaigns.selectors import campaign_audience, campaign_preview_contact, campaign_render
from campaigns.services import audience_values, campaign_create, campaign_replace
from core.errors import ErrorCode, ServiceError, ValidationFailed
from core.http.validation import validate
from domains.models import Domain
from domains.selectors import domain_list
from messaging.content.services import content_check
from messaging.models import EmailType
from segments.console import ConditionField
from segments.models import Segment

CONTENT_FIELDS = ["name", "description", "type", "from_email", "from_name", "reply_to", "subject", "body"]
AUDIENCE_FIELDS = ["audience_type", "segment", "audience_condition"]


def api_fields() -> dict[str, str]:
    """The API's input names and the form's fields they fill (`from` -> `from_email`, `segmentId` -> `segment`)."""
    fields = CampaignInputSerializer().fields
    return {name: "segment" if field.source == "segment_id" else field.source for name, field in fields.items()}


def api_input(cleaned: dict) -> dict:
    """The form's values as the API's request body."""
    segment = cleaned.get("segment")
    values = {**cleaned, "segment": str(segment.pk) if segment else None}
    return {name: values.get(field) for name, field in api_fields().items()}


def refusal_errors(refused: ServiceError) -> list[tuple[str | None, str]]:
    """(form field or None, message) of each error of a service's refusal: a validation error's API path mapped to
    the field it came from (its rest, such as a condition's `groups.0.filters.1.operator`, kept in the message), an
    unverified sender at the `from` address, anything else for the whole form."""
    if isinstance(refused, ValidationFailed):
        fields, errors = api_fields(), []
        for error in refused.errors:
            head, _, rest = (error.get("field") or "").partition(".")
            errors.append((fields.get(head), f"{rest}: {error['message']}" if rest else error["message"]))
        return errors
    if refused.code == ErrorCode.DOMAIN_NOT_VERIFIED:
        return [("from_email", f"{refused.message}. {refused.suggestion or ''}".strip())]
    return [(None, refused.message)]


# The audience types in an operator's words (the API's names are in the page's values).
AUDIENCES = [
    (AudienceType.ALL, "All subscribed contacts"),
    (AudienceType.SEGMENT, "A segment"),
    (AudienceType.FILTERED, "Contacts matching a condition"),
]


class CampaignForm(forms.ModelForm):
    """A campaign's content and audience for one project (`project`, set by the admin on the class)."""

    project: Project

    class Meta:
        model = Campaign
        fields = [*CONTENT_FIELDS, *AUDIENCE_FIELDS]
        widgets = {
            "subject": forms.TextInput(attrs={"class": "vLargeTextField"}),
            "body": forms.Textarea(attrs={"rows": 16, "class": "vLargeTextField", "spellcheck": "false"}),
            "description": forms.Textarea(attrs={"rows": 2, "class": "vLargeTextField"}),
            "audience_type": forms.RadioSelect,
        }
        help_texts = {
            "subject": "Liquid: {{ firstName | default: 'there' }} is the contact's data.",
            "body": "HTML with Liquid, as the API's body. The unsubscribe footer of marketing mail is added at sending.",
            "reply_to": "Optional.",
            "from_name": "Optional: the project's name when left blank.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance._state.adding:
            self.instance.project = self.project
        if "segment" not in self.fields:
            return  # a read-only page: the fields are shown as saved
        self.fields["audience_type"].choices = AUDIENCES
        self.fields["segment"].queryset = Segment.objects.filter(project=self.project).order_by("name")
        self.fields["segment"].help_text = "For a segment: one of this project's segments."
        # The condition of a FILTERED audience: the segments' builder, validated against the project as the API does.
        self.fields["audience_condition"] = ConditionField(
            project=self.project,
            required=False,
            active_when=("audience_type", AudienceType.FILTERED),
            help_text="For contacts matching a condition.",
        )
        verified = domain_list(project=self.project).filter(status=Domain.Status.VERIFIED)
        names = ", ".join(verified.values_list("name", flat=True))
        # The admin shows help texts as HTML.
        self.fields["from_email"].help_text = (
            escape(f"An address on a verified domain of the project, or on a subdomain of one: {names}.")
            if names
            else "The project has no verified domain yet: verify one under Domains first."
        )

    def _post_clean(self):
        """Where a ModelForm validates its instance, the API's validation and write: its input serializer, then its
        service (the sender's domain, the content's syntax, the audience, the model's own checks). One call validates
        and writes, so a refusal is at its field and nothing is saved; the admin's save then has nothing to add."""
        if self.errors:
            return
        try:
            with transaction.atomic():
                values = validate(CampaignInputSerializer, api_input(self.cleaned_data))
                if self.instance._state.adding:
                    self.instance = campaign_create(project=self.project, **values)
                else:
                    self.instance = campaign_replace(campaign=self.instance, **values)
        except ServiceError as refused:
            for field, message in refusal_errors(refused):
                self.add_error(field if field in self.fields else None, message)
        except ValidationError as refused:
            for field, messages in refused.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)


def composer_preview(post, project: Project) -> dict:
    """The composer's subject and body (as posted, unsaved) rendered for the chosen contact (`preview_contact`: an
    email or id of the project's), with what is wrong: a syntax error at its line and column, as saving would say
    it, a contact not found, a rendering limit."""
    subject, body = post.get("subject", ""), post.get("body", "")
    errors = []
    try:
        content_check(project=project, values={"subject": subject, "body": body})
    except ValidationFailed as refused:
        errors += refusal_errors(refused)
    lookup = post.get("preview_contact", "").strip()
    contact = campaign_preview_contact(project=project, lookup=lookup) if lookup else None
    if lookup and contact is None:
        errors.append(("preview_contact", f"No contact of this project has the email or id {lookup!r}"))
    answer = {"contact": contact.email if contact else None, "subject": "", "html": "", "errors": errors}
    try:
        rendered = campaign_render(campaign=Campaign(project=project, subject=subject, body=body), contact=contact)
    except ValidationFailed as refused:
        errors += refusal_errors(refused)
    else:
        answer.update(subject=rendered.subject, html=rendered.html)
    return answer


def composer_recipients(post, project: Project) -> dict:
    """How many contacts the composer's audience (as posted, unsaved) reaches now: the audience checked as saving
    checks it, then counted by the send's own selection."""
    try:
        condition = json.loads(post["audience_condition"]) if post.get("audience_condition", "").strip() else None
    except ValueError:
        return {"recipients": None, "errors": [("audience_condition", "Enter a valid JSON.")]}
    audience = post.get("audience_type") or AudienceType.ALL
    if audience not in AudienceType.values:
        return {"recipients": None, "errors": [("audience_type", f"Unknown audience {audience!r}")]}
    try:
        segment_id = uuid.UUID(post["segment"]) if post.get("segment") else None
        values = audience_values(
            project=project,
            values={"audience_type": audience, "segment_id": segment_id, "audience_condition": condition},
        )
    except ValueError:
        return {"recipients": None, "errors": [("segment", "Select one of this project's segments.")]}
    except ServiceError as refused:
        return {"recipients": None, "errors": refusal_errors(refused)}
    email_type = post.get("type") if post.get("type") in EmailType.values else EmailType.MARKETING
    campaign = Campaign(project=project, type=email_type, **values)
    return {"recipients": campaign_audience(campaign=campaign).count(), "errors": []}
