"""The one condition language of Herald: validate a condition tree, compile it to a `Q` over contacts, or
evaluate it for one contact. Segments, campaign audiences and the CONDITION steps of workflows use it."""

from segments.conditions.python import condition_matches
from segments.conditions.sql import condition_q
from segments.conditions.validation import condition_validate

__all__ = ["condition_matches", "condition_q", "condition_validate"]
