"""Jobs: queued bulk work with progress, for every app (imports, bulk changes, a campaign's fan-out, a project
reset). `services` claims a job, runs it and records its state; `tasks` re-publishes the jobs whose worker or
message was lost.

Jobs would sit in the core, under every app, but their rows are a model of accounts (`accounts.models.Job`, which
belongs to a project), and a model lives in an installed app: so they are a room of accounts, which every app may
import. The boundary: jobs know no other room, except the projects an operator's purge covers
(`accounts.tenancy.selectors.project_ids_in_scope`).
"""
