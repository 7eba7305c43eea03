"""Image uploads (`POST /uploads/image`): checked by content with Pillow, stored under a random name through
Django's storage API (local media served by the service, or S3), answered with a public URL (docs/billing.md).

1. Size: at most `UPLOAD_IMAGE_MAX_BYTES` (5 MB) counted on the bytes received, else 413.
2. Kind, judged by the content, never the name: Pillow must identify PNG, JPEG, GIF or WebP (SVG and anything
   else: 422 at `file`); the header's sides at most `UPLOAD_IMAGE_MAX_SIDE` (8,000 px) and its pixels at most
   `UPLOAD_IMAGE_MAX_PIXELS` (40 million), read before anything is decoded: a small file can promise an image
   that takes a thousand times its size in memory once decoded.
3. Integrity: `verify()` on the parsed file, then a fresh open and a full `load()` of the pixels (a truncated file
   fails there: verify alone misses it for most formats).
4. JPEG metadata: EXIF (APP1, with XMP), IPTC (APP13) and comments are cut out of the file segment by segment,
   leaving the compressed image data byte for byte; a photo whose EXIF orientation rotates it is rotated into
   place and re-encoded instead (quality 95), so it still shows upright once its EXIF is gone. Other formats are
   stored exactly as sent.
5. Name: `images/<random>.<extension of the detected format>`.
6. Quota: the project's stored images and this one at most `UPLOAD_STORAGE_QUOTA_BYTES`, else 413; the bytes are
   reserved (an `ImageUpload` row) before the file is written, so two uploads at once cannot both pass.
"""

import io
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Sum
from PIL import Image, ImageOps, UnidentifiedImageError

from accounts.models import Project
from core.errors import PayloadTooLarge, ValidationFailed
from messaging.models import ImageUpload

FORMATS = {"PNG": "png", "JPEG": "jpg", "GIF": "gif", "WEBP": "webp"}
CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
FOLDER = "images"
# JPEG segments that carry metadata about the photo, not the image: APP1 (EXIF, XMP), APP13 (IPTC), COM.
_METADATA_MARKERS = {0xE1, 0xED, 0xFE}
_ORIENTATION = 0x0112


@dataclass(frozen=True)
class StoredImage:
    name: str
    url: str


def _refused(message: str, code: str = "custom") -> ValidationFailed:
    return ValidationFailed.field("file", message, code)


def upload_max_bytes() -> int:
    return settings.UPLOAD_IMAGE_MAX_BYTES


def too_large(size: int) -> PayloadTooLarge:
    limit = upload_max_bytes()
    return PayloadTooLarge(
        f"The image is larger than {limit // (1024 * 1024)} MB",
        details={"field": "file", "maxBytes": limit, "size": size},
    )


def _identify(content: bytes) -> str:
    """The detected format's extension, once the file parsed, verified and decoded in full."""
    side, pixels = settings.UPLOAD_IMAGE_MAX_SIDE, settings.UPLOAD_IMAGE_MAX_PIXELS
    try:
        with Image.open(io.BytesIO(content)) as image:
            kind = image.format
            if kind not in FORMATS:
                raise _refused(f"Expected a PNG, JPEG, GIF or WebP image, received {kind}", "invalid_type")
            # `open` has read the header only: the size is known before a pixel is decoded (verify, load, transpose).
            width, height = image.size
            if width > side or height > side:
                raise _refused(f"The image is {width}x{height} px; at most {side} px a side", "too_big")
            if width * height > pixels:
                raise _refused(
                    f"The image is {width}x{height} px ({width * height:,} pixels); at most {pixels:,} pixels",
                    "too_big",
                )
            image.verify()
        with Image.open(io.BytesIO(content)) as image:
            image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _refused("The image decompresses to too many pixels", "too_big") from None
    except UnidentifiedImageError:
        raise _refused("Expected a PNG, JPEG, GIF or WebP image", "invalid_type") from None
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError) as exc:
        # Pillow's ways of saying the file is damaged or truncated.
        raise _refused(f"The image is damaged or truncated ({exc.__class__.__name__})", "invalid_string") from None
    return FORMATS[kind]


def _jpeg_segments_without_metadata(content: bytes) -> bytes:
    """The JPEG without its metadata segments; everything from the start of the scan on is copied as it is."""
    out = bytearray(content[:2])
    index = 2
    while index + 1 < len(content):
        if content[index] != 0xFF:
            raise ValueError("not a marker")
        marker = content[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0xDA, 0xD9):  # start of scan, end of image: the rest is image data
            out += content[index:]
            return bytes(out)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # markers without a length
            out += content[index : index + 2]
            index += 2
            continue
        end = index + 2 + int.from_bytes(content[index + 2 : index + 4], "big")
        if marker not in _METADATA_MARKERS:
            out += content[index:end]
        index = end
    raise ValueError("no image data")


def jpeg_without_metadata(content: bytes) -> bytes:
    with Image.open(io.BytesIO(content)) as image:
        orientation = image.getexif().get(_ORIENTATION, 1)
        if orientation in (None, 1):
            try:
                return _jpeg_segments_without_metadata(content)
            except ValueError:
                pass  # a layout the walk does not know: re-encoded below
        upright = ImageOps.exif_transpose(image)
        buffer = io.BytesIO()
        extra = {"icc_profile": image.info["icc_profile"]} if image.info.get("icc_profile") else {}
        upright.save(buffer, format="JPEG", quality=95, **extra)
        return buffer.getvalue()


def public_url(name: str) -> str:
    """The storage's URL of `name`, absolute: local media is served under PUBLIC_URL."""
    url = default_storage.url(name)
    return f"{settings.PUBLIC_URL}{url}" if url.startswith("/") else url


def _quota_reserve(*, project: Project, name: str, size: int) -> ImageUpload:
    """Count `size` more bytes against the project's upload storage quota, or 413 past it. The project's row is
    locked while its uploads are added up, so concurrent uploads of one project take turns; other projects' uploads
    are neither counted nor waited for."""
    quota = settings.UPLOAD_STORAGE_QUOTA_BYTES
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
        used = ImageUpload.objects.filter(project=project).aggregate(total=Sum("size"))["total"] or 0
        if used + size > quota:
            raise PayloadTooLarge(
                f"The project's uploaded images would take more than {quota // (1024 * 1024)} MB of storage",
                details={"field": "file", "quotaBytes": quota, "usedBytes": used, "size": size},
            )
        return ImageUpload.objects.create(project=project, name=name, size=size)


def image_upload(*, project: Project, upload) -> StoredImage:
    """Check and store one image uploaded by `project`; returns its name and public URL."""
    limit = upload_max_bytes()
    if upload.size is not None and upload.size > limit:
        raise too_large(upload.size)
    content = upload.read(limit + 1)
    if len(content) > limit:
        raise too_large(len(content))
    if not content:
        raise _refused("The file is empty", "too_small")
    extension = _identify(content)
    if extension == "jpg":
        content = jpeg_without_metadata(content)
    reserved = _quota_reserve(
        project=project, name=f"{FOLDER}/{secrets.token_urlsafe(24)}.{extension}", size=len(content)
    )
    try:
        # Outside the reservation's transaction: a slow storage (S3) holds no lock.
        name = default_storage.save(reserved.name, ContentFile(content))
    except BaseException:
        reserved.delete()
        raise
    if name != reserved.name:  # a storage may pick another name; the random one is never taken in practice
        ImageUpload.objects.filter(pk=reserved.pk).update(name=name)
    return StoredImage(name=name, url=public_url(name))
