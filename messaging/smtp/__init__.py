"""The SMTP edge (docs/smtp.md): `python manage.py smtp_server` runs two aiosmtpd listeners in one process.

- Submission (port 587 in production): an app authenticates with its project's secret key and hands over a message;
  it becomes the same emails as a `POST /v1/send` through the one send path (`messaging.sending.services`).
- Inbound (the MX, port 25): mail for a project's verified domains becomes an `email.received` event on the sender's
  contact; delivery reports (DSN) and abuse reports (ARF) sent to a bounce address go to the feedback room.

This room is on top of messaging: it uses the send path and the feedback room, and no room imports it. The listeners
are asyncio; every database step runs in a worker thread through `bridge.in_django`.
"""
