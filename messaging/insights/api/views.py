"""Activity and analytics endpoints: parse the query, call one read of `messaging.insights`, serialize it.

Each reads from the replica when there is one (docs/scaling.md, "Read replica"): these are figures over many rows,
which may be seconds behind the writes."""

from datetime import datetime, timedelta

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from accounts.http.views import ApiView
from core.errors import ValidationFailed
from core.http.pagination import int_param, uuid_param
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.schema import count_parameter
from core.replica import replica_reads
from messaging.insights import activity, analytics
from messaging.insights.api import serializers as s
from messaging.insights.registry import ActivityFilters

MAX_RANGE = timedelta(days=366)
# The activity feed's window when it is given no startDate.
FEED_DEFAULT_DAYS = 30
MAX_HOURLY_RANGE = timedelta(days=7)
MAX_RECENT_MINUTES = 60
DAYS = count_parameter("days", "Period in days up to now (default 30; larger than 366 is clamped)")
LIMIT = count_parameter("limit", "1 to 100 (larger values are clamped)")
START = OpenApiParameter("startDate", str, description="ISO 8601 date or timestamp (UTC unless an offset is given)")
END = OpenApiParameter("endDate", str, description="ISO 8601 date (the whole day) or timestamp")


# Query parsing ---------------------------------------------------------------------------------------------------


def _date_param(params, name: str, *, end_of_day: bool = False) -> datetime | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    value = analytics.parse_moment(raw, end_of_day=end_of_day)
    if value is None:
        raise ValidationFailed.field(name, f"{name} must be an ISO 8601 date or timestamp", "invalid_string")
    return value


def _range(params, *, default_days: int | None) -> tuple[datetime | None, datetime | None]:
    """startDate and endDate, not inverted; with `default_days`, both filled in (the last `default_days` days
    when absent) and at most a year apart."""
    start, end = _date_param(params, "startDate"), _date_param(params, "endDate", end_of_day=True)
    if default_days is not None:
        end = end or timezone.now()
        start = start or end - timedelta(days=default_days)
    if start and end and start > end:
        raise ValidationFailed.field("endDate", "endDate must not be before startDate", "custom")
    if start and end and default_days is not None and end - start > MAX_RANGE:
        raise ValidationFailed.field("startDate", "The range may span at most one year (366 days)", "too_big")
    return start, end


def _types_param(params) -> frozenset[str] | None:
    raw = params.get("types")
    if not raw:
        return None
    types = frozenset(part.strip() for part in raw.split(",") if part.strip())
    unknown = sorted(types - activity.known_activity_types())
    if unknown:
        raise ValidationFailed.field(
            "types",
            f'Unknown activity type "{unknown[0]}"; expected one of: {", ".join(activity.ACTIVITY_TYPES)}',
            "invalid_enum_value",
        )
    return types


def _days(params) -> int:
    return int_param(params, "days", default=30, maximum=366)


# Views -----------------------------------------------------------------------------------------------------------


class ActivityListView(ApiView):
    @extend_schema(
        operation_id="activity_list",
        parameters=[
            count_parameter("limit", "1 to 100 (default 20; larger values are clamped)"),
            OpenApiParameter("cursor", str, description="`cursor` of the previous page"),
            OpenApiParameter("types", str, description="Comma-separated activity types"),
            OpenApiParameter("contactId", OpenApiTypes.UUID),
            OpenApiParameter("emailId", OpenApiTypes.UUID),
            OpenApiParameter(
                "startDate",
                str,
                description="ISO 8601 date or timestamp (UTC unless an offset is given); default 30 days before endDate or now",
            ),
            END,
        ],
        responses={200: s.ActivityPageSerializer, 400: ERROR, 422: ERROR},
    )
    @replica_reads()
    def get(self, request):
        params = request.query_params
        start, end = _range(params, default_days=None)
        # Without a startDate the feed is the last FEED_DEFAULT_DAYS days (up to endDate): a page and its total read
        # those months of history, not all of them.
        start = start or (end or timezone.now()) - timedelta(days=FEED_DEFAULT_DAYS)
        filters = ActivityFilters(
            types=_types_param(params),
            contact_id=uuid_param(params, "contactId"),
            email_id=uuid_param(params, "emailId"),
            start=start,
            end=end,
        )
        limit = int_param(params, "limit", default=20, maximum=100)
        page = activity.activity_feed(
            project=request.auth.project, filters=filters, limit=limit, cursor=params.get("cursor") or None
        )
        return Response(s.ActivityPageSerializer(page).data)


class ActivityStatsView(ApiView):
    @extend_schema(operation_id="activity_stats", parameters=[DAYS], responses={200: s.ActivityStatsSerializer})
    @replica_reads()
    def get(self, request):
        stats = activity.activity_stats(project=request.auth.project, days=_days(request.query_params))
        return Response(s.ActivityStatsSerializer(stats).data)


class ActivityRecentCountView(ApiView):
    @extend_schema(
        operation_id="activity_recent_count",
        parameters=[count_parameter("minutes", "1 to 60 (default 5)", maximum=MAX_RECENT_MINUTES)],
        responses={200: s.RecentCountSerializer, 422: ERROR},
    )
    @replica_reads()
    def get(self, request):
        minutes = int_param(request.query_params, "minutes", default=5)
        if minutes > MAX_RECENT_MINUTES:
            raise ValidationFailed.field("minutes", f"minutes must be at most {MAX_RECENT_MINUTES}", "too_big")
        count = activity.activity_recent_count(project=request.auth.project, minutes=minutes)
        return Response(s.RecentCountSerializer({"count": count, "minutes": minutes}).data)


class ActivityTypesView(ApiView):
    @extend_schema(operation_id="activity_types", responses={200: s.ActivityTypesSerializer})
    @replica_reads()
    def get(self, request):
        types = activity.activity_types_present(project=request.auth.project)
        return Response(s.ActivityTypesSerializer({"types": types}).data)


class ActivityUpcomingView(ApiView):
    @extend_schema(
        operation_id="activity_upcoming",
        parameters=[
            count_parameter("limit", "1 to 100 (default 50; larger values are clamped)"),
            count_parameter("daysAhead", "1 to 366 (default 30; larger values are clamped)"),
        ],
        responses={200: s.UpcomingSerializer, 422: ERROR},
    )
    @replica_reads()
    def get(self, request):
        params = request.query_params
        limit = int_param(params, "limit", default=50, maximum=100)
        days_ahead = int_param(params, "daysAhead", default=30, maximum=366)
        items = activity.activity_upcoming(project=request.auth.project, limit=limit, days_ahead=days_ahead)
        return Response({"activities": items})


class TimeseriesView(ApiView):
    @extend_schema(
        operation_id="analytics_timeseries",
        parameters=[
            START,
            END,
            OpenApiParameter("interval", str, enum=list(analytics.INTERVALS), description="day (default) or hour"),
        ],
        responses={200: s.TimeseriesPointSerializer(many=True), 422: ERROR},
    )
    @replica_reads()
    def get(self, request):
        params = request.query_params
        start, end = _range(params, default_days=30)
        interval = params.get("interval") or "day"
        if interval not in analytics.INTERVALS:
            raise ValidationFailed.field("interval", "interval must be day or hour", "invalid_enum_value")
        # Counted in whole hours, so that "the last 7 days" (startDate 7 days before a now that has moved on by
        # the time the request runs) is still 7 x 24 + 1 points.
        if (
            interval == "hour"
            and analytics.bucket_of(end, "hour") - analytics.bucket_of(start, "hour") > MAX_HOURLY_RANGE
        ):
            raise ValidationFailed.field("interval", "interval hour is for ranges up to 7 days", "custom")
        series = analytics.email_timeseries(project=request.auth.project, start=start, end=end, interval=interval)
        return Response(s.TimeseriesPointSerializer(series, many=True).data)


class TopEventsView(ApiView):
    @extend_schema(
        operation_id="analytics_top_events",
        parameters=[LIMIT, DAYS],
        responses={200: s.TopEventSerializer(many=True), 422: ERROR},
    )
    @replica_reads()
    def get(self, request):
        params = request.query_params
        limit = int_param(params, "limit", default=10, maximum=100)
        events = analytics.top_events(project=request.auth.project, limit=limit, days=_days(params))
        return Response(s.TopEventSerializer(events, many=True).data)


class TopCampaignsView(ApiView):
    @extend_schema(
        operation_id="analytics_top_campaigns",
        parameters=[LIMIT, DAYS],
        responses={200: s.TopCampaignSerializer(many=True), 422: ERROR},
    )
    @replica_reads()
    def get(self, request):
        params = request.query_params
        limit = int_param(params, "limit", default=10, maximum=100)
        campaigns = analytics.top_campaigns(project=request.auth.project, limit=limit, days=_days(params))
        return Response(s.TopCampaignSerializer(campaigns, many=True).data)


class CampaignStatsView(ApiView):
    @extend_schema(
        operation_id="analytics_campaign_stats", parameters=[DAYS], responses={200: s.CampaignStatsSerializer}
    )
    @replica_reads()
    def get(self, request):
        stats = analytics.campaign_stats(project=request.auth.project, days=_days(request.query_params))
        return Response(s.CampaignStatsSerializer(stats).data)
