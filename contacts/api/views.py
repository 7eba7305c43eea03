"""Contacts and events endpoints: parse, call one service or selector, serialize."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.http.authentication import PublicKeyAuthentication
from accounts.http.views import HandlerView, ProjectScopedViewSet
from accounts.jobs.services import job_get
from contacts import selectors, services, upsert
from contacts.api import serializers as s
from contacts.bulk import JOB_TYPES, contacts_bulk_start
from contacts.imports import JOB_TYPE as IMPORT_JOB_TYPE
from contacts.imports import contact_import_start
from contacts.models import Contact, Event
from contacts.usage import event_usage_summary, field_usage_summary
from core.errors import NotFound, ValidationFailed
from core.http.exceptions import BareError
from core.http.output import output
from core.http.pagination import CursorSort, cursor_page, int_param, uuid_param
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.schema import IDEMPOTENCY_KEY, bare_or_envelope_400, count_parameter
from core.http.validation import validate
from core.ids import uuid_or_none
from core.usage import refuse_delete_while_used, used_in

CONTACT_SORT = CursorSort({"createdAt": "created_at", "email": "email"}, default="createdAt")
EVENT_SORT = CursorSort({"createdAt": "created_at"}, default="createdAt")

PAGE_PARAMS = [
    count_parameter("limit", "1 to 100 (default 20; larger values are clamped)"),
    OpenApiParameter("cursor", str, description="`cursor` of the previous page"),
]
FIELD_PARAM = OpenApiParameter("field", str, OpenApiParameter.PATH, description="`data.<key>` or a standard field")
JOB_PARAM = OpenApiParameter("job_id", OpenApiTypes.UUID, OpenApiParameter.PATH)


def _job_accepted(job, message: str) -> Response:
    return Response(s.JobAcceptedSerializer({"job_id": job.id, "message": message}).data, status=202)


class ContactViewSet(ProjectScopedViewSet):
    queryset = Contact.objects.all()
    resource_name = "Contact"

    @extend_schema(
        operation_id="contacts_list",
        parameters=[
            *PAGE_PARAMS,
            OpenApiParameter("search", str, description="Case-insensitive substring of the email"),
            OpenApiParameter("subscribed", bool, description="`true` or `false`; omitted: both"),
            OpenApiParameter("sort", str, enum=["createdAt", "email"]),
            OpenApiParameter("dir", str, enum=["asc", "desc"]),
        ],
        responses={200: s.ContactPageSerializer, 400: ERROR, 422: ERROR},
    )
    def list(self, request):
        params = request.query_params
        subscribed = {"true": True, "false": False}.get(params.get("subscribed", "").lower())
        queryset = selectors.contact_list(project=self.project, search=params.get("search"), subscribed=subscribed)
        return Response(s.ContactPageSerializer(cursor_page(queryset, params, sort=CONTACT_SORT)).data)

    @extend_schema(
        operation_id="contacts_upsert",
        request=s.ContactCreateInputSerializer,
        responses={
            200: s.ContactUpsertOutputSerializer,
            201: s.ContactUpsertOutputSerializer,
            400: bare_or_envelope_400("`{error}` when `email` is missing; the envelope for a malformed body"),
            422: ERROR,
        },
    )
    def create(self, request):
        if request.data.get("email") in (None, ""):
            raise BareError("Email is required")
        data = validate(s.ContactCreateInputSerializer, request.data)
        result = upsert.contact_upsert(
            project=self.project,
            email=data["email"],
            subscribed=data.get("subscribed"),
            data=data.get("data"),
            source="api",
        )
        return Response(s.ContactUpsertOutputSerializer(result).data, status=201 if result.created else 200)

    @extend_schema(operation_id="contacts_get", responses={200: s.ContactOutputSerializer, 404: ERROR})
    def retrieve(self, request, pk=None):
        return Response(s.ContactOutputSerializer(self.get_object()).data)

    @extend_schema(
        operation_id="contacts_update",
        request=s.ContactUpdateInputSerializer,
        responses={200: s.ContactOutputSerializer, 404: ERROR, 409: ERROR, 422: ERROR},
    )
    def partial_update(self, request, pk=None):
        contact = self.get_object()
        data = validate(s.ContactUpdateInputSerializer, request.data)
        contact.project = self.project
        contact = services.contact_update(
            contact=contact,
            email=data.get("email", services.UNSET),
            subscribed=data.get("subscribed"),
            data=data.get("data", services.UNSET),
        )
        return Response(s.ContactOutputSerializer(contact).data)

    @extend_schema(operation_id="contacts_delete", responses={204: None, 404: ERROR})
    def destroy(self, request, pk=None):
        services.contact_delete(contact=self.get_object())
        return Response(status=204)

    @extend_schema(
        operation_id="contacts_lookup",
        request=s.ContactLookupInputSerializer,
        responses={200: s.ContactLookupOutputSerializer, 422: ERROR},
    )
    def lookup(self, request):
        emails = validate(s.ContactLookupInputSerializer, request.data)["emails"]
        return Response(
            s.ContactLookupOutputSerializer(selectors.contacts_lookup(project=self.project, emails=emails)).data
        )

    @extend_schema(operation_id="contacts_fields", responses={200: s.FieldListSerializer})
    def fields(self, request):
        fields = selectors.contact_fields(project=self.project)
        return Response(s.FieldListSerializer({"fields": fields, "count": len(fields)}).data)

    @extend_schema(
        operation_id="contacts_field_values",
        parameters=[FIELD_PARAM, count_parameter("limit", "1 to 200 (default 100; larger values are clamped)")],
        responses={200: s.FieldValuesSerializer, 422: ERROR},
    )
    def field_values(self, request, field=None):
        limit = int_param(request.query_params, "limit", default=100, maximum=200)
        values, count = selectors.contact_field_values(project=self.project, field=field, limit=limit)
        return Response(s.FieldValuesSerializer({"field": field, "values": values, "count": count}).data)

    @extend_schema(
        operation_id="contacts_field_usage", parameters=[FIELD_PARAM], responses={200: s.FieldUsageSerializer}
    )
    def field_usage(self, request, field=None):
        return Response(s.FieldUsageSerializer(field_usage_summary(project=self.project, field=field)).data)

    @extend_schema(
        operation_id="contacts_field_delete",
        parameters=[
            OpenApiParameter(
                "field",
                {"type": "string", "pattern": "^data\\..+"},
                OpenApiParameter.PATH,
                description="`data.<key>`: only custom fields can be deleted",
            )
        ],
        responses={204: None, 409: ERROR, 422: ERROR},
    )
    def field_delete(self, request, field=None):
        standard, key = selectors.split_field(field)
        if standard is not None or key is None or not field.startswith("data."):
            raise ValidationFailed.field("field", "Only custom fields (data.<key>) can be deleted", "custom")
        used = used_in("field", project=self.project, of=field)
        refuse_delete_while_used(used, f'Field "{field}" is in use and cannot be deleted', usedIn=used)
        services.contact_field_delete(project=self.project, key=key)
        return Response(status=204)

    @extend_schema(
        operation_id="contacts_import",
        request={"multipart/form-data": s.ImportInputSerializer},
        responses={202: s.JobAcceptedSerializer, 413: ERROR, 422: ERROR},
    )
    def import_csv(self, request):
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed.field("file", "Required", "invalid_type", received="undefined")
        job = contact_import_start(project=self.project, upload=upload)
        return _job_accepted(job, "Import queued")

    @extend_schema(
        operation_id="contacts_import_status", parameters=[JOB_PARAM], responses={200: s.JobSerializer, 404: ERROR}
    )
    def import_status(self, request, job_id=None):
        return Response(s.JobSerializer(job_get(project=self.project, job_id=job_id, types=[IMPORT_JOB_TYPE])).data)

    def _bulk(self, request, action: str) -> Response:
        ids = validate(s.BulkInputSerializer, request.data)["contactIds"]
        job = contacts_bulk_start(project=self.project, action=action, contact_ids=ids)
        return _job_accepted(job, f"Bulk {action} queued for {len(ids)} contact(s)")

    @extend_schema(
        operation_id="contacts_bulk_subscribe",
        request=s.BulkInputSerializer,
        responses={202: s.JobAcceptedSerializer, 422: ERROR},
    )
    def bulk_subscribe(self, request):
        return self._bulk(request, "subscribe")

    @extend_schema(
        operation_id="contacts_bulk_unsubscribe",
        request=s.BulkInputSerializer,
        responses={202: s.JobAcceptedSerializer, 422: ERROR},
    )
    def bulk_unsubscribe(self, request):
        return self._bulk(request, "unsubscribe")

    @extend_schema(
        operation_id="contacts_bulk_delete",
        request=s.BulkInputSerializer,
        responses={202: s.JobAcceptedSerializer, 422: ERROR},
    )
    def bulk_delete(self, request):
        return self._bulk(request, "delete")

    @extend_schema(
        operation_id="contacts_bulk_status", parameters=[JOB_PARAM], responses={200: s.JobSerializer, 404: ERROR}
    )
    def bulk_status(self, request, job_id=None):
        job = job_get(project=self.project, job_id=job_id, types=JOB_TYPES.values())
        return Response(s.JobSerializer(job).data)


class ContactImportViewSet(ContactViewSet):
    """The import upload is multipart; every other contact endpoint takes JSON."""

    parser_classes = [MultiPartParser]


_track_output = output(s.TrackOutputSerializer)


def track_handle(project, values: dict, payload: dict) -> dict:
    """POST /v1/track and /events/track once the body is valid: record the event, answer the Track result."""
    result = upsert.event_track(
        project=project,
        email=values["email"],
        name=values["event"],
        subscribed=values.get("subscribed"),
        data=values.get("data"),
    )
    return _track_output({"success": True, "data": result})


class TrackView(HandlerView):
    """POST /v1/track: the public key only (it is published in browsers); honours Idempotency-Key."""

    # A successful call is answered in front of Django (accounts.http.fastroute) with this view's serializer and handler.

    authentication_classes = [PublicKeyAuthentication]
    idempotent = True
    atomic_writes = False  # event_track needs no transaction around it (contacts.upsert)
    input_serializer = s.TrackInputSerializer
    handler = staticmethod(track_handle)

    @extend_schema(
        operation_id="v1_track",
        request=s.TrackInputSerializer,
        responses={200: s.TrackOutputSerializer, 400: ERROR, 409: ERROR, 422: ERROR},
        parameters=[IDEMPOTENCY_KEY],
    )
    def post(self, request):
        return self.handled(request)


class EventViewSet(ProjectScopedViewSet):
    queryset = Event.objects.all()
    resource_name = "Event"

    @extend_schema(
        operation_id="events_track",
        request=s.TrackInputSerializer,
        responses={200: s.TrackOutputSerializer, 422: ERROR},
    )
    def track(self, request):
        return Response(track_handle(self.project, validate(s.TrackInputSerializer, request.data), request.data))

    @extend_schema(
        operation_id="events_list",
        parameters=[
            *PAGE_PARAMS,
            OpenApiParameter("name", str, description="Only events of this name"),
            OpenApiParameter("contactId", OpenApiTypes.UUID, description="Only events of this contact"),
        ],
        responses={200: s.EventPageSerializer, 400: ERROR, 422: ERROR},
    )
    def list(self, request):
        params = request.query_params
        contact_id = uuid_param(params, "contactId")
        queryset = selectors.event_list(project=self.project, name=params.get("name"), contact_id=contact_id)
        return Response(s.EventPageSerializer(cursor_page(queryset, params, sort=EVENT_SORT)).data)

    @extend_schema(
        operation_id="events_of_contact",
        parameters=[*PAGE_PARAMS, OpenApiParameter("contact_id", OpenApiTypes.UUID, OpenApiParameter.PATH)],
        responses={200: s.EventPageSerializer, 404: ERROR},
    )
    def of_contact(self, request, contact_id=None):
        contact_uuid = uuid_or_none(contact_id)
        if contact_uuid is None or not Contact.objects.filter(project=self.project, pk=contact_uuid).exists():
            raise NotFound("Contact", contact_id)
        queryset = selectors.event_list(project=self.project, contact_id=contact_uuid)
        return Response(s.EventPageSerializer(cursor_page(queryset, request.query_params, sort=EVENT_SORT)).data)

    @extend_schema(
        operation_id="events_stats",
        parameters=[count_parameter("days", "Period in days (default 30, at most 3,650: larger values are clamped)")],
        responses={200: s.EventStatSerializer(many=True), 422: ERROR},
    )
    def stats(self, request):
        days = int_param(request.query_params, "days", default=30, maximum=3650)
        return Response(s.EventStatSerializer(selectors.event_stats(project=self.project, days=days), many=True).data)

    @extend_schema(operation_id="events_names", responses={200: s.EventNamesSerializer})
    def names(self, request):
        names = selectors.event_names(project=self.project)
        return Response(s.EventNamesSerializer({"event_names": names}).data)

    @extend_schema(
        operation_id="events_name_usage",
        parameters=[OpenApiParameter("event_name", str, OpenApiParameter.PATH)],
        responses={200: s.EventUsageSerializer},
    )
    def usage(self, request, event_name=None):
        return Response(s.EventUsageSerializer(event_usage_summary(project=self.project, name=event_name)).data)

    @extend_schema(
        operation_id="events_delete_by_name",
        parameters=[OpenApiParameter("event_name", str, OpenApiParameter.PATH)],
        responses={200: s.DeletedCountSerializer, 409: ERROR},
    )
    def delete_by_name(self, request, event_name=None):
        used = used_in("event", project=self.project, of=event_name)
        refuse_delete_while_used(
            used,
            f'Event "{event_name}" is in use and cannot be deleted',
            usedInSegments=used["segments"],
            usedInWorkflows=used["workflows"],
        )
        deleted = services.events_delete_by_name(project=self.project, name=event_name)
        return Response(s.DeletedCountSerializer({"deleted_count": deleted}).data)
