from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from config.api.nul import reject_nul_characters


class JsonObjectParser(JSONParser):
    """JSON whose top level must be an object (every endpoint's body is one) and whose strings hold no NUL
    character (422 naming the field: the database could not store it)."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise ParseError("the body must be a JSON object")
        reject_nul_characters(data)
        return data
