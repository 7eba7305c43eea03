"""The shared core under every app: the error vocabulary (`errors`), timestamps (`time`), ids (`ids`), JSON type
names (`json`), pages of rows (`pages`), the rate-limit counter and the client's address (`ratelimit`), the Redis
client (`cache`), after-commit hooks that cannot fail their request (`commit`), the prepared statements of the hottest
paths (`db`), the helpers that keep scans of user text linear (`scan`), secrets encrypted at rest (`crypto`) and
Standard Webhooks signatures (`standard_webhooks`), and the generic HTTP base of the API (`http`).

It imports no app; the apps and `config` build on it.
"""
