"""Messaging: templates, the one send path, delivery, engagement, provider feedback and insights.

Rooms (each a package), from the top down; a room imports only the rooms below it (`.importlinter`, "Inside
messaging"). A room that answers HTTP does so from its `api` package (views and routes); `messaging/urls.py` includes
them all. Engagement's routes are included first by `config/urls.py`, and partly answered in front of Django.
- `smtp`: the SMTP edge (`manage.py smtp_server`): submission into the send path, inbound mail as events, delivery
  and abuse reports handed to feedback.
- `sending`: `/v1/send` input parsing, the send service, dispatch to the delivery queue, delivery, the SMTP/provider
  transport, MIME and the per-project throttle.
- `feedback`: provider webhooks, bounces and complaints, the suppression list, the reputation guard.
- Independent of each other:
  - `content`: templates (model access, usage) and rendering (Liquid, the scope of a recipient).
  - `engagement`: open and click tracking, tracked links, the hit queue, the hosted unsubscribe/subscribe/manage
    pages.
  - `insights`: the activity feed, analytics, the hourly stats rollup and retention.
  - `uploads`: the images of templates (`POST /uploads/image`) and the route serving local uploads.
- `vocabulary` (a module): what more than one room says about a message (an address, header safety, body size,
  `insert_before_body_end`, the data of an `email.*` event).
A room with tasks has its own `tasks.py`, and each room its `tests/`; `admin`, `apps`, `urls` and the operator commands
(`management`) compose the rooms.

The boundary for the apps above (campaigns, workflows): they queue mail only through
`messaging.sending.services.emails_queue` (with `SendContent`, the content of one send, its recipients as
`Address`es or `Recipient`s, and the `Policy` of their way in: `CAMPAIGN`, `WORKFLOW`, `WORKFLOW_ADDRESS`, `TEST`), and
render only through `messaging.content.rendering` (`render_email`, `template_scope`, `check_syntax`). Content they
save is checked by `messaging.content.services.content_check` and validated by the templates' input serializer
(`messaging.content.serializers`) with the header and body checks of `messaging.vocabulary`. A figure they keep from
the email events counts what the rollup counts (`messaging.insights.counting`). Nothing else of messaging is theirs
to import; `messaging.models` for reads and foreign keys.
"""
