"""The pages behind the links of the account emails (`views`, routed by `urls`): address verification, password
reset and invitations, served by the service itself (docs/pages.md)."""
