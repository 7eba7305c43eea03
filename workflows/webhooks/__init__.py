"""Outbound webhooks, the WEBHOOK step's sender: Standard Webhooks signatures."""

from workflows.webhooks.signing import webhook_secret_generate

__all__ = ["webhook_secret_generate"]
