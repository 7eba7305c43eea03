"""Activity feed, analytics and retention: reads over events and emails, the hourly email stats rollup that the
dashboards read, and the registry other apps use to add their activity."""
