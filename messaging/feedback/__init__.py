"""Provider feedback: delivery, bounce, complaint, open and click notifications arriving on `/webhooks/...`."""
