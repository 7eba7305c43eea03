from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JsonObjectParser(JSONParser):
    """JSON whose top level must be an object: every endpoint's body is one."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise ParseError("the body must be a JSON object")
        return data
