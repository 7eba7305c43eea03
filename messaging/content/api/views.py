"""The templates endpoints: parse, call one service or selector, serialize."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from accounts.http.views import ProjectScopedViewSet
from core.errors import ValidationFailed
from core.http.exceptions import BareError
from core.http.pagination import offset_page, ordering
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.schema import bare_or_envelope_400, count_parameter
from core.http.validation import validate
from messaging.content import selectors, services
from messaging.content import serializers as s
from messaging.content.usage import template_usage_summary
from messaging.models import EmailType, Template

TEMPLATE_SORT = {"name": "name", "createdAt": "created_at", "updatedAt": "updated_at"}


class TemplateViewSet(ProjectScopedViewSet):
    queryset = Template.objects.all()
    resource_name = "Template"

    @extend_schema(
        summary="List templates",
        parameters=[
            count_parameter("page", "1-based page number (default 1)"),
            count_parameter("pageSize", "1 to 100 (default 20; larger values are clamped)"),
            OpenApiParameter("type", str, enum=EmailType.values),
            OpenApiParameter("search", str),
            OpenApiParameter("sort", str, enum=list(TEMPLATE_SORT)),
            OpenApiParameter("dir", str, enum=["asc", "desc"]),
        ],
        responses=s.TemplatePageSerializer,
    )
    def list(self, request):
        params = request.query_params
        kind = params.get("type")
        if kind and kind not in EmailType.values:
            raise ValidationFailed.field(
                "type", f"Expected one of {', '.join(EmailType.values)}", "invalid_enum_value", received=kind
            )
        search = (params.get("search") or "").strip()
        queryset = selectors.template_list(project=self.project, email_type=kind, search=search)
        page = offset_page(queryset.order_by(*ordering(params, TEMPLATE_SORT, "createdAt")), params)
        return Response(s.TemplatePageSerializer(page).data)

    @extend_schema(
        summary="Create a template",
        request=s.TemplateCreateInputSerializer,
        responses={
            201: s.TemplateOutputSerializer,
            400: bare_or_envelope_400("`{error}` when `from` is missing; the envelope for a malformed body"),
        },
    )
    def create(self, request):
        if not request.data.get("from"):
            raise BareError("from is required: the sender address of the template")
        values = validate(s.TemplateCreateInputSerializer, request.data)
        template = services.template_create(project=self.project, **values)
        return Response(s.TemplateOutputSerializer(template).data, status=201)

    @extend_schema(summary="Get a template", responses=s.TemplateOutputSerializer)
    def retrieve(self, request, pk=None):
        return Response(s.TemplateOutputSerializer(self.get_object()).data)

    @extend_schema(summary="Update a template", request=s.TemplateInputSerializer, responses=s.TemplateOutputSerializer)
    def partial_update(self, request, pk=None):
        template = self.get_object()
        values = validate(s.TemplateInputSerializer, request.data, partial=True)
        template = services.template_update(template=template, **values)
        return Response(s.TemplateOutputSerializer(template).data)

    @extend_schema(
        summary="Delete a template (409 while a campaign or workflow uses it)", responses={204: None, 409: ERROR}
    )
    def destroy(self, request, pk=None):
        services.template_delete(template=self.get_object())
        return Response(status=204)

    @extend_schema(summary="Duplicate a template", request=None, responses={201: s.IdSerializer})
    def duplicate(self, request, pk=None):
        copy = services.template_duplicate(template=self.get_object())
        return Response(s.IdSerializer(copy).data, status=201)

    @extend_schema(summary="Campaigns and workflow steps using a template", responses=s.TemplateUsageSerializer)
    def usage(self, request, pk=None):
        return Response(s.TemplateUsageSerializer(template_usage_summary(self.get_object())).data)
