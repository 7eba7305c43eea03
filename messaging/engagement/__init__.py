"""Engagement: open and click tracking, tracked links, the hit queue and the hosted subscription pages."""
