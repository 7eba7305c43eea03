from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.http.sanity import MAX_DEPTH, reject_faulty_body


class JsonObjectParser(JSONParser):
    """JSON whose top level must be an object (every endpoint's body is one), refused at the field when it holds
    what no endpoint takes (`core.http.sanity`: NUL characters, deep nesting)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"the body is nested deeper than {MAX_DEPTH} levels") from None
        if not isinstance(data, dict):
            raise ParseError("the body must be a JSON object")
        reject_faulty_body(data)
        return data
