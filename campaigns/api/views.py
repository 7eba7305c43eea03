"""Campaigns endpoints: parse, call one service or selector, serialize. Single campaigns are wrapped as
`{success, data, message?}`; the list is the page envelope."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from accounts.http.views import ProjectScopedViewSet
from campaigns import selectors, sending, services, stats
from campaigns.api import serializers as s
from campaigns.models import Campaign, CampaignStatus
from core.errors import BadRequest
from core.http.pagination import choice_param, offset_page
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.schema import count_parameter
from core.http.validation import validate

# The campaigns list's documented key order (the templates' differs).


def wrapped(campaign: Campaign, *, status: int = 200, message: str | None = None) -> Response:
    body = {"success": True, "data": s.CampaignOutputSerializer(selectors.campaign_with_recipients(campaign)).data}
    if message:
        body["message"] = message
    return Response(body, status=status)


class CampaignViewSet(ProjectScopedViewSet):
    queryset = Campaign.objects.select_related("segment")
    resource_name = "Campaign"

    @extend_schema(
        operation_id="campaigns_list",
        parameters=[
            count_parameter("page", "1-based page number (default 1)"),
            count_parameter("pageSize", "1 to 100 (default 20; larger values are clamped)"),
            OpenApiParameter("status", str, enum=CampaignStatus.values),
            OpenApiParameter("search", str),
            OpenApiParameter("sort", str, enum=list(selectors.CAMPAIGN_SORT)),
            OpenApiParameter("dir", str, enum=["asc", "desc"]),
        ],
        responses={200: s.CampaignPageSerializer, 400: ERROR},
    )
    def list(self, request):
        params = request.query_params
        status = params.get("status") or None
        if status is not None and status not in CampaignStatus.values:
            raise BadRequest(
                f"Unknown status {status!r}; expected one of {', '.join(CampaignStatus.values)}",
                details={"parameter": "status"},
            )
        campaigns = selectors.campaign_list(
            project=self.project,
            status=status,
            search=(params.get("search") or "").strip(),
            sort=choice_param(params, "sort", selectors.CAMPAIGN_SORT, "createdAt"),
            descending=choice_param(params, "dir", ("asc", "desc"), "desc") == "desc",
        )
        page = offset_page(campaigns, params)
        selectors.campaigns_with_recipients(page.rows)
        return Response(s.CampaignPageSerializer(page).data)

    @extend_schema(
        operation_id="campaigns_create",
        request=s.CampaignInputSerializer,
        responses={201: s.CampaignEnvelopeSerializer, 403: ERROR, 422: ERROR},
    )
    def create(self, request):
        values = validate(s.CampaignInputSerializer, request.data)
        return wrapped(services.campaign_create(project=self.project, **values), status=201)

    @extend_schema(operation_id="campaigns_get", responses={200: s.CampaignEnvelopeSerializer, 404: ERROR})
    def retrieve(self, request, pk=None):
        return wrapped(self.get_object())

    @extend_schema(
        operation_id="campaigns_replace",
        request=s.CampaignInputSerializer,
        responses={200: s.CampaignEnvelopeSerializer, 403: ERROR, 404: ERROR, 409: ERROR, 422: ERROR},
    )
    def update(self, request, pk=None):
        campaign = self.get_object()
        values = validate(s.CampaignInputSerializer, request.data)
        return wrapped(services.campaign_replace(campaign=campaign, **values))

    @extend_schema(
        operation_id="campaigns_delete", responses={200: s.CampaignMessageSerializer, 404: ERROR, 409: ERROR}
    )
    def destroy(self, request, pk=None):
        services.campaign_delete(campaign=self.get_object())
        return Response({"success": True, "message": "Campaign deleted successfully"})

    @extend_schema(
        operation_id="campaigns_duplicate", request=None, responses={201: s.CampaignEnvelopeSerializer, 404: ERROR}
    )
    def duplicate(self, request, pk=None):
        return wrapped(services.campaign_duplicate(campaign=self.get_object()), status=201)

    @extend_schema(
        operation_id="campaigns_send",
        request=s.CampaignSendInputSerializer,
        responses={200: s.CampaignEnvelopeSerializer, 400: ERROR, 403: ERROR, 404: ERROR, 409: ERROR, 422: ERROR},
    )
    def send(self, request, pk=None):
        campaign = self.get_object()
        values = validate(s.CampaignSendInputSerializer, request.data)
        campaign, message = sending.campaign_send(campaign=campaign, scheduled_for=values.get("scheduledFor"))
        return wrapped(campaign, message=message)

    @extend_schema(
        operation_id="campaigns_cancel",
        request=None,
        responses={200: s.CampaignEnvelopeSerializer, 404: ERROR, 409: ERROR},
    )
    def cancel(self, request, pk=None):
        campaign = sending.campaign_cancel(campaign=self.get_object())
        return wrapped(campaign, message="Campaign cancelled successfully")

    @extend_schema(
        operation_id="campaigns_test",
        request=s.CampaignTestInputSerializer,
        responses={200: s.CampaignMessageSerializer, 403: ERROR, 404: ERROR, 422: ERROR},
    )
    def test(self, request, pk=None):
        campaign = self.get_object()
        values = validate(s.CampaignTestInputSerializer, request.data)
        return Response(
            {"success": True, "message": sending.campaign_send_test(campaign=campaign, email=values["email"])}
        )

    @extend_schema(operation_id="campaigns_stats", responses={200: s.CampaignFiguresSerializer, 404: ERROR})
    def stats(self, request, pk=None):
        campaign = selectors.campaign_with_recipients(self.get_object())
        return Response(s.CampaignFiguresSerializer(stats.campaign_stats(campaign=campaign)).data)
