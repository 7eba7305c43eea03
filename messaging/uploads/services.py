"""Image uploads (`POST /uploads/image`): checked by content with Pillow, stored under a random name through
Django's storage API (local media served by the service, or S3), answered with a public URL (docs/billing.md).

1. Size: at most `UPLOAD_IMAGE_MAX_BYTES` (5 MB) counted on the bytes received, else 413.
2. Kind, judged by the content, never the name: Pillow must identify PNG, JPEG, GIF or WebP (SVG and anything
   else: 422 at `file`); the header's sides at most `UPLOAD_IMAGE_MAX_SIDE` (8,000 px), and no decompression bomb.
3. Integrity: `verify()` on the parsed file, then a fresh open and a full `load()` of the pixels (a truncated file
   fails there: verify alone misses it for most formats).
4. JPEG metadata: EXIF (APP1, with XMP), IPTC (APP13) and comments are cut out of the file segment by segment,
   leaving the compressed image data byte for byte; a photo whose EXIF orientation rotates it is rotated into
   place and re-encoded instead (quality 95), so it still shows upright once its EXIF is gone. Other formats are
   stored exactly as sent.
5. Name: `images/<random>.<extension of the detected format>`.
"""

import io
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image, ImageOps, UnidentifiedImageError

from core.errors import PayloadTooLarge, ValidationFailed

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
    side = settings.UPLOAD_IMAGE_MAX_SIDE
    try:
        with Image.open(io.BytesIO(content)) as image:
            kind = image.format
            if kind not in FORMATS:
                raise _refused(f"Expected a PNG, JPEG, GIF or WebP image, received {kind}", "invalid_type")
            width, height = image.size
            if width > side or height > side:
                raise _refused(f"The image is {width}x{height} px; at most {side} px a side", "too_big")
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


def image_upload(*, upload) -> StoredImage:
    """Check and store one uploaded image; returns its name and public URL."""
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
    name = default_storage.save(f"{FOLDER}/{secrets.token_urlsafe(24)}.{extension}", ContentFile(content))
    return StoredImage(name=name, url=public_url(name))
