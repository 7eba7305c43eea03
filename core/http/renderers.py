import json

from rest_framework.renderers import JSONRenderer


class JsonRenderer(JSONRenderer):
    """Compact UTF-8 JSON, no browsable API."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode()
