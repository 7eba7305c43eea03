"""The generic HTTP base of the API, over DRF and Django alone: the error envelope and its exception handler
(`exceptions`), request ids (`middleware`), input checks (`sanity`, `parsers`, `validation`), the output serializer
base and its fields (`serializers`, `fields`, `output`), pagination envelopes (`pagination`), the renderer, the
OPTIONS metadata, the OpenAPI helpers (`schema`), and what Django's middleware decides for an answer given in front
of it (`front`).

It knows no app: who is calling and for which project (keys, sessions, roles, idempotency records) is
`accounts.http`'s, built on this.
"""
