from rest_framework.metadata import SimpleMetadata


class ApiMetadata(SimpleMetadata):
    """`OPTIONS` answers the view's name and description, the allowed methods in `Allow`. DRF's default also
    describes the fields of the view's one serializer; ours have an input and an output serializer per action
    (documented in the OpenAPI schema), so there is nothing single to describe."""

    def determine_actions(self, request, view) -> dict:
        return {}
