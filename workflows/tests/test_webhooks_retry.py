"""The retry schedule of webhook calls: about 1, 5 and 25 s, every attempt within a minute of the first."""

import pytest

from workflows.webhooks import WebhookResult, webhook_retry_delay

FAILED = WebhookResult(status_code=503, body="", error="HTTP 503", retryable=True)
FINAL = WebhookResult(status_code=404, body="", error="HTTP 404", retryable=False)


@pytest.mark.parametrize(
    ("result", "attempt", "elapsed", "delay"),
    [
        (FAILED, 1, 0.2, 1.0),
        (FAILED, 2, 1.5, 5.0),
        (FAILED, 3, 7.0, 25.0),
        # Three attempts that each waited out a 10 s timeout: the last starts at 60 s, not 61.
        (FAILED, 3, 36.0, 24.0),
        (FAILED, 3, 60.5, None),
        (FAILED, 4, 32.0, None),
        (FINAL, 1, 0.2, None),
    ],
)
def test_retry_delay(result, attempt, elapsed, delay):
    assert webhook_retry_delay(result=result, attempt=attempt, elapsed=elapsed) == delay
