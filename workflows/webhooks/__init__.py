"""Outbound webhooks, the WEBHOOK step's sender: the SSRF guard, one guarded call and
the retry schedule. The engine renders the step (URL, headers, body) and records the result; this package only
sends (docs/workflows.md, "Webhooks"; docs/security.md for the guard)."""

from workflows.webhooks.client import WebhookResult, webhook_call_limit, webhook_send
from workflows.webhooks.retry import webhook_retry_delay

__all__ = ["WebhookResult", "webhook_call_limit", "webhook_retry_delay", "webhook_send"]
