"""Tenancy: projects and who may act for them. Projects and their keys (`services`, `selectors`, `keys`), the
shared caches of a key's and of a dashboard session's access to a project (`keycache`, `sessioncache`), members and
their roles (`members`), and what the apps above register about a project: its setup facts, reset steps and
default sender domain (`registry`). A project reset runs as a job (`tasks`).

The boundary: tenancy uses identity only to invite an unknown address (`accounts.identity.invitations`) and jobs
only to run a reset (`accounts.jobs.services`); people, their sessions and tokens are identity's.
"""
