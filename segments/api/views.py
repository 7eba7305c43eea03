"""Segments endpoints: parse, call one service or selector, serialize."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from accounts.http.views import ProjectScopedViewSet
from core.http.exceptions import BareError
from core.http.pagination import int_param
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.schema import bare_or_envelope_400, count_parameter
from core.http.validation import validate
from core.replica import replica_reads
from segments import selectors, services
from segments.api import serializers as s
from segments.models import Segment, SegmentType

BARE_ERROR = bare_or_envelope_400(
    "`{error}` when a DYNAMIC segment has no object condition; the envelope for a malformed body"
)


class SegmentViewSet(ProjectScopedViewSet):
    queryset = Segment.objects.all()
    resource_name = "Segment"

    @extend_schema(operation_id="segments_list", responses={200: s.SegmentOutputSerializer(many=True)})
    def list(self, request):
        return Response(s.SegmentOutputSerializer(selectors.segment_list(project=self.project), many=True).data)

    @extend_schema(
        operation_id="segments_create",
        request=s.SegmentCreateInputSerializer,
        responses={201: s.SegmentOutputSerializer, 400: BARE_ERROR, 422: ERROR},
    )
    def create(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        if body.get("type", SegmentType.DYNAMIC) == SegmentType.DYNAMIC and not isinstance(body.get("condition"), dict):
            raise BareError("condition is required for a DYNAMIC segment and must be an object {logic, groups}")
        data = validate(s.SegmentCreateInputSerializer, request.data)
        segment = services.segment_create(
            project=self.project,
            name=data["name"],
            description=data.get("description", ""),
            segment_type=data["type"],
            condition=data.get("condition"),
            track_membership=data["trackMembership"],
        )
        return Response(s.SegmentOutputSerializer(segment).data, status=201)

    @extend_schema(operation_id="segments_get", responses={200: s.SegmentOutputSerializer, 404: ERROR})
    def retrieve(self, request, pk=None):
        return Response(s.SegmentOutputSerializer(self.get_object()).data)

    @extend_schema(
        operation_id="segments_update",
        request=s.SegmentUpdateInputSerializer,
        responses={200: s.SegmentOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def partial_update(self, request, pk=None):
        segment = self.get_object()
        data = validate(s.SegmentUpdateInputSerializer, request.data)
        segment = services.segment_update(
            segment=segment,
            name=data.get("name", services.UNSET),
            description=data.get("description", services.UNSET),
            condition=data.get("condition", services.UNSET),
            track_membership=data.get("trackMembership", services.UNSET),
        )
        return Response(s.SegmentOutputSerializer(segment).data)

    @extend_schema(operation_id="segments_delete", responses={204: None, 404: ERROR, 409: ERROR})
    def destroy(self, request, pk=None):
        services.segment_delete(segment=self.get_object())
        return Response(status=204)

    @extend_schema(
        operation_id="segments_contacts",
        parameters=[
            count_parameter("page", "1-based page number (default 1)"),
            count_parameter("pageSize", "1 to 100 (default 20; larger values are clamped)"),
        ],
        responses={200: s.SegmentMembersPageSerializer, 404: ERROR, 422: ERROR},
    )
    def contacts(self, request, pk=None):
        params = request.query_params
        segment = self.get_object()
        # The members and their count may be seconds behind the writes (docs/scaling.md, "Read replica").
        with replica_reads():
            page = selectors.segment_members_page(
                segment=segment,
                page=int_param(params, "page", default=1),
                page_size=int_param(params, "pageSize", default=20, maximum=100),
            )
        return Response(s.SegmentMembersPageSerializer(page).data)

    @extend_schema(
        operation_id="segments_refresh", request=None, responses={200: s.SegmentRefreshOutputSerializer, 404: ERROR}
    )
    def refresh(self, request, pk=None):
        segment = services.segment_refresh(segment=self.get_object())
        return Response(s.SegmentRefreshOutputSerializer(segment).data)

    @extend_schema(
        operation_id="segments_members_add",
        request=s.MembersAddInputSerializer,
        responses={200: s.MembersAddOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def members_add(self, request, pk=None):
        segment = self.get_object()
        data = validate(s.MembersAddInputSerializer, request.data)
        result = services.segment_members_add(
            segment=segment, emails=data["emails"], create_missing=data["createMissing"], subscribed=data["subscribed"]
        )
        return Response(s.MembersAddOutputSerializer(result).data)

    @extend_schema(
        operation_id="segments_members_remove",
        request=s.MembersRemoveInputSerializer,
        responses={200: s.MembersRemoveOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def members_remove(self, request, pk=None):
        segment = self.get_object()
        data = validate(s.MembersRemoveInputSerializer, request.data)
        removed = services.segment_members_remove(segment=segment, emails=data["emails"])
        return Response(s.MembersRemoveOutputSerializer({"removed": removed}).data)

    @extend_schema(
        operation_id="segments_compute",
        request=None,
        responses={200: s.ComputeOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def compute(self, request, pk=None):
        result = services.segment_compute(segment=self.get_object())
        return Response(s.ComputeOutputSerializer(result).data)
