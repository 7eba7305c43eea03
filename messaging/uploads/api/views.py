"""`POST /uploads/image` (secret key, multipart field `file`) and the route that serves local uploads."""

import io
import re

from django.core.files.storage import default_storage
from django.core.files.uploadedfile import InMemoryUploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers
from django.http import FileResponse
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.http.views import ApiView
from core.errors import ValidationFailed
from core.http.exceptions import route_not_found_response
from core.http.schema import ERROR_RESPONSE
from core.http.serializers import OutputSerializer
from messaging.uploads.services import CONTENT_TYPES, FOLDER, image_upload, too_large, upload_max_bytes

# Room for the multipart framing and headers around the file.
_MULTIPART_OVERHEAD = 64 * 1024
_NAME = re.compile(rf"^{FOLDER}/[A-Za-z0-9_-]{{16,64}}\.({'|'.join(CONTENT_TYPES)})$")


class ImageUploadInputSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="A PNG, JPEG, GIF or WebP image, at most 5 MB, 8,000 px a side and 40 million pixels"
    )


class ImageUploadedSerializer(OutputSerializer):
    url = serializers.CharField(help_text="Public address of the stored image")


class BoundedUploadHandler(FileUploadHandler):
    """Keeps the uploaded file in memory and stops reading it one byte past the limit: the request's own body limit
    (50 MB, for JSON) is not this route's."""

    def __init__(self, request=None, limit: int = 0):
        super().__init__(request)
        self.limit = limit
        self.received = 0

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.chunks = []
        raise StopFutureHandlers()

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            raise too_large(self.received)
        self.chunks.append(raw_data)

    def file_complete(self, file_size):
        content = b"".join(self.chunks)
        return InMemoryUploadedFile(
            io.BytesIO(content), self.field_name, self.file_name, self.content_type, len(content), self.charset
        )


class ImageUploadView(ApiView):
    parser_classes = [MultiPartParser]
    atomic_writes = False  # nothing in the database: the storage is written once, at the end

    def initial(self, request, *args, **kwargs):
        # Before authentication: a browser session's CSRF check reads the form, and with it the file, through the
        # handlers set by then (set later, Django refuses them: the upload has already been read).
        request._request.upload_handlers = [BoundedUploadHandler(request._request, limit=upload_max_bytes())]
        super().initial(request, *args, **kwargs)

    @extend_schema(
        summary="Upload an image for templates and campaigns; returns its public URL",
        request={"multipart/form-data": ImageUploadInputSerializer},
        responses={201: ImageUploadedSerializer, 413: ERROR_RESPONSE, 422: ERROR_RESPONSE},
    )
    def post(self, request):
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > upload_max_bytes() + _MULTIPART_OVERHEAD:
            raise too_large(length)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed.field("file", "Required: a multipart file field named file", "invalid_type")
        stored = image_upload(project=request.auth.project, upload=upload)
        return Response(ImageUploadedSerializer(stored).data, status=201)


@require_safe
def media_serve(request, name: str):
    """A local upload, by the exact name the upload gave it (nothing else under the media folder is served)."""
    if not _NAME.match(name) or not default_storage.exists(name):
        return route_not_found_response(request)
    extension = name.rsplit(".", 1)[1]
    response = FileResponse(default_storage.open(name), content_type=CONTENT_TYPES[extension])
    # Names are random and never reused: a cache may keep the file for good.
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response
