"""When the engine calls a webhook again: after about 1, 5 and 25 seconds, every attempt starting within a minute
of the first (docs/workflows.md), and only for results worth it (network errors, timeouts, 5xx)."""

from workflows.webhooks.client import WebhookResult

RETRY_DELAYS_SECONDS = (1.0, 5.0, 25.0)
RETRY_WINDOW_SECONDS = 60.0


def webhook_retry_delay(*, result: WebhookResult, attempt: int, elapsed: float) -> float | None:
    """Seconds to wait before the next attempt, or None when `result` is final.

    `attempt` counts the attempts made so far (1 after the first); `elapsed` is the time since the first began.
    A slow receiver eats into the last delay rather than pushing the last attempt past the window.
    """
    if not result.retryable or attempt > len(RETRY_DELAYS_SECONDS):
        return None
    remaining = RETRY_WINDOW_SECONDS - elapsed
    if remaining < 0:
        return None
    return min(RETRY_DELAYS_SECONDS[attempt - 1], remaining)
