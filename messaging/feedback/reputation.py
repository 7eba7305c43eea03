"""The reputation guard: a project whose mail bounces or draws complaints past the thresholds of docs/feedback.md is
disabled before it damages the sending infrastructure that every project shares.

Rates are over a rolling 7 days (hard bounces and complaints of that window over the emails sent in it) and count
only from 100 sent emails on; the 24-hour ceilings are absolute. Bounces and complaints are counted over partial
indexes of the email table and sent mail is summed from the hourly rollup, so the guard is cheap enough to run after
every hard bounce and complaint (never per delivery).
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Q, Sum
from django.utils import timezone

from accounts.models import Project
from accounts.tenancy.services import project_disable, project_enable
from core.time import iso
from messaging.insights.rollup import hour_of
from messaging.models import Email, EmailStatsHour, ReputationReview

logger = logging.getLogger(__name__)

DISABLED_REASON = "EMAIL_REPUTATION"
WINDOW = timedelta(days=7)
CEILING_WINDOW = timedelta(hours=24)
MINIMUM_SENT = 100
# Percentages of the emails sent in the window.
BOUNCE_RATE = {"warning": 5.0, "critical": 10.0}
COMPLAINT_RATE = {"warning": 0.075, "critical": 0.15}
BOUNCE_CEILING_24H = 100
COMPLAINT_CEILING_24H = 25


def _counts(project: Project, field: str, since: datetime, day_since: datetime) -> tuple[int, int]:
    """(window, last 24 hours) of emails whose `field` timestamp falls in them."""
    recent = Q(**{f"{field}__gte": day_since})
    # Counting the timestamp itself (not the id) keeps this an index-only scan of the partial index.
    row = Email.objects.filter(project=project, **{f"{field}__gte": since}).aggregate(
        week=Count(field), day=Count(field, filter=recent)
    )
    return row["week"], row["day"]


def _rate(count: int, sent: int) -> float | None:
    return round(100.0 * count / sent, 3) if sent >= MINIMUM_SENT else None


def _level(rate: float | None, thresholds: dict) -> str:
    if rate is None:
        return "ok"
    if rate >= thresholds["critical"]:
        return "critical"
    return "warning" if rate >= thresholds["warning"] else "ok"


def project_reputation(*, project: Project, now: datetime | None = None) -> dict:
    """The project's bounce and complaint figures, the thresholds they are held to, and the resulting state
    (`ok`, `warning`, `critical`) with the reasons; shaped for the account security endpoint."""
    now = now or timezone.now()
    reviewed_at = ReputationReview.objects.filter(project=project).values_list("reviewed_at", flat=True).first()
    since, day_since = (max(now - span, reviewed_at or now - span) for span in (WINDOW, CEILING_WINDOW))
    # Sent mail from the hourly rollup (`messaging.insights.rollup`): summing at most 169 rows instead of counting up
    # to millions of email rows on every bounce (700 ms at 1M sent a week). Whole UTC hours, so the window may
    # start up to an hour early; bounces and complaints are few and counted exactly, this one included.
    sent = EmailStatsHour.objects.filter(project=project, hour__gte=hour_of(since)).aggregate(n=Sum("sent"))["n"] or 0
    bounces, bounces_24h = _counts(project, "bounced_at", since, day_since)
    complaints, complaints_24h = _counts(project, "complained_at", since, day_since)
    bounce_rate, complaint_rate = _rate(bounces, sent), _rate(complaints, sent)
    findings = [
        (_level(bounce_rate, BOUNCE_RATE), f"bounce rate {bounce_rate}% over 7 days"),
        (_level(complaint_rate, COMPLAINT_RATE), f"complaint rate {complaint_rate}% over 7 days"),
        ("critical" if bounces_24h >= BOUNCE_CEILING_24H else "ok", f"{bounces_24h} bounces in 24 hours"),
        ("critical" if complaints_24h >= COMPLAINT_CEILING_24H else "ok", f"{complaints_24h} complaints in 24 hours"),
    ]
    levels = {level for level, _ in findings}
    state = "critical" if "critical" in levels else "warning" if "warning" in levels else "ok"
    return {
        "state": state,
        "reasons": [f"{reason} ({level})" for level, reason in findings if level != "ok"],
        "window": {
            "days": WINDOW.days,
            # Later than 7 days ago when an operator re-enabled the project since.
            "since": iso(since),
            "sent": sent,
            "bounces": bounces,
            "complaints": complaints,
            "bounceRate": bounce_rate,
            "complaintRate": complaint_rate,
        },
        "last24Hours": {"bounces": bounces_24h, "complaints": complaints_24h},
        "thresholds": {
            "minimumSent": MINIMUM_SENT,
            "bounceRate": BOUNCE_RATE,
            "complaintRate": COMPLAINT_RATE,
            "bounces24Hours": BOUNCE_CEILING_24H,
            "complaints24Hours": COMPLAINT_CEILING_24H,
        },
        "autoDisable": settings.REPUTATION_AUTO_DISABLE,
        "disabled": project.disabled,
        "disabledReason": project.disabled_reason or None,
    }


def project_reputation_guard(*, project: Project) -> dict:
    """After a hard bounce or complaint: evaluate the project and disable it when critical (unless auto-disable is
    off). Warnings are logged; an operator re-enables a disabled project in the admin."""
    reputation = project_reputation(project=project)
    if reputation["state"] == "ok":
        return reputation
    reasons = "; ".join(reputation["reasons"])
    if reputation["state"] == "critical" and settings.REPUTATION_AUTO_DISABLE and not project.disabled:
        project_disable(project=project, reason=DISABLED_REASON)
        reputation.update(disabled=True, disabledReason=DISABLED_REASON)
        logger.error("Project %s disabled for its email reputation: %s", project.id, reasons)
    else:
        logger.warning("Project %s email reputation is %s: %s", project.id, reputation["state"], reasons)
    return reputation


def project_reputation_reset(*, project: Project) -> None:
    """An operator's decision after looking into a project: enable it, and judge it from now on only by the mail
    it sends from here (otherwise the next bounce would disable it again on the figures already seen)."""
    ReputationReview.objects.update_or_create(project=project, defaults={"reviewed_at": timezone.now()})
    if project.disabled:
        project_enable(project=project)


def _security_level(rate: float | None, thresholds: dict) -> str:
    return {"ok": "healthy"}.get(level := _level(rate, thresholds), level)


def project_security(*, project: Project) -> dict:
    """The account security endpoints' answer (docs/feedback.md, "Security endpoint"): the guard's state, the
    bounce and complaint rates over the guard's 7-day window and over all time, each rate's level, and the current
    suspension."""
    reputation = project_reputation(project=project)
    window = reputation["window"]
    sent_all = EmailStatsHour.objects.filter(project=project).aggregate(n=Sum("sent"))["n"] or 0
    totals = Email.objects.filter(project=project).aggregate(
        bounces=Count("bounced_at"), complaints=Count("complained_at")
    )
    rates = {
        "bounce7Day": window["bounceRate"],
        "bounceAllTime": _rate(totals["bounces"], sent_all),
        "complaint7Day": window["complaintRate"],
        "complaintAllTime": _rate(totals["complaints"], sent_all),
    }
    suspensions = []
    if project.disabled:
        suspensions.append(
            {"reason": project.disabled_reason or None, "at": iso(project.disabled_at), "resolvedAt": None}
        )
    return {
        "status": {"ok": "healthy"}.get(reputation["state"], reputation["state"]),
        "disabled": project.disabled,
        "disabledReason": project.disabled_reason or None,
        "levels": {
            name: _security_level(rate, BOUNCE_RATE if name.startswith("bounce") else COMPLAINT_RATE)
            for name, rate in rates.items()
        },
        "rates": rates,
        "counts": {
            "sent7Day": window["sent"],
            "bounces7Day": window["bounces"],
            "complaints7Day": window["complaints"],
            "sentAllTime": sent_all,
            "bouncesAllTime": totals["bounces"],
            "complaintsAllTime": totals["complaints"],
        },
        "recentSuspensions": suspensions,
    }
