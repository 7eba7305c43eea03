"""Provider feedback (webhooks for delivery, bounce, complaint, open and click), the suppression list and the
reputation guard."""
