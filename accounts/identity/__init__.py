"""Identity: people and how they get in. Sign-up, the password check of a login with its lockout (`users`, and the
login throttle backend in `backends`), sign-in with GitHub or Google (`oauth`), address verification and password
resets with their signed tokens (`tokens`), invitations of addresses that have no account yet (`invitations`), the
service's own mail to people (`mail`, sent by a task in `tasks`), and the periodic purge of expired browser sessions
(`sessions`).

The boundary: identity knows users and the invitations that bring them into a project, never a project's keys,
members' roles or jobs; tenancy invites an unknown address through `invitations.invitation_create`. The HTTP side
(logging a session in and out) is `accounts.api`'s.
"""
