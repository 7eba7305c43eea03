"""POST /uploads/image: accepted images are stored under a random name and served back; everything else is
refused with the field named, and nothing is stored."""

import io
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PUBLIC_URL = "https://mail.example.test"
    return settings.MEDIA_ROOT


def image_bytes(kind: str, size=(40, 30), **save) -> bytes:
    buffer = io.BytesIO()
    image = Image.new("RGB", size, (200, 30, 90))
    image.putpixel((0, 0), (0, 255, 0))
    image.save(buffer, format=kind, **save)
    return buffer.getvalue()


def upload(client, content: bytes, name: str = "picture.png", content_type: str = "image/png"):
    return client.post(
        "/uploads/image", {"file": SimpleUploadedFile(name, content, content_type=content_type)}, format="multipart"
    )


def stored(media) -> list[Path]:
    return [path for path in media.rglob("*") if path.is_file()] if media.exists() else []


def served_path(url: str) -> str:
    assert url.startswith("https://mail.example.test/media/images/")
    return url.removeprefix("https://mail.example.test")


@pytest.mark.parametrize(("kind", "extension"), [("PNG", "png"), ("GIF", "gif"), ("WEBP", "webp")])
def test_an_image_is_stored_and_served_back_byte_for_byte(secret_client, anon_client, media, kind, extension):
    content = image_bytes(kind)
    # The name and declared type say nothing: the content decides the extension.
    response = upload(secret_client, content, name="holiday.jpeg", content_type="application/octet-stream")
    assert response.status_code == 201, response.json()
    assert response["RateLimit-Remaining"]  # counted like every API call
    url = response.json()["url"]
    assert url.endswith(f".{extension}")
    served = anon_client.get(served_path(url))
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == content
    assert served["Content-Type"] == f"image/{extension}"
    assert served["X-Content-Type-Options"] == "nosniff"
    assert len(stored(media)) == 1


def test_names_are_random(secret_client):
    content = image_bytes("PNG")
    urls = {upload(secret_client, content).json()["url"] for _ in range(3)}
    assert len(urls) == 3
    assert all(len(url.rsplit("/", 1)[1].split(".")[0]) >= 32 for url in urls)


def test_jpeg_exif_is_stripped_and_pixels_kept(secret_client, anon_client):
    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x8825] = {2: (48.0, 51.0, 24.0)}  # GPS latitude
    content = image_bytes("JPEG", exif=exif.tobytes(), quality=90)
    assert b"SecretCam" in content
    response = upload(secret_client, content, name="photo.jpg", content_type="image/jpeg")
    assert response.status_code == 201, response.json()
    url = response.json()["url"]
    assert url.endswith(".jpg")
    served = b"".join(anon_client.get(served_path(url)).streaming_content)
    assert b"SecretCam" not in served and b"Exif" not in served
    with Image.open(io.BytesIO(served)) as clean, Image.open(io.BytesIO(content)) as original:
        assert not clean.getexif()
        assert clean.tobytes() == original.tobytes()  # the compressed data was not touched


def test_a_rotated_photo_stays_upright_without_its_exif(secret_client, anon_client):
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    content = image_bytes("JPEG", size=(40, 20), exif=exif.tobytes())
    url = upload(secret_client, content, name="photo.jpg").json()["url"]
    served = b"".join(anon_client.get(served_path(url)).streaming_content)
    with Image.open(io.BytesIO(served)) as clean:
        assert clean.size == (20, 40) and not clean.getexif()


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims the size and whose data is a little zlib stream: too big to decode, cheap to send."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1000))
        + chunk(b"IEND", b"")
    )


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>'


@pytest.mark.parametrize(
    ("content", "name", "code"),
    [
        (SVG, "logo.svg", "invalid_type"),
        (SVG, "logo.png", "invalid_type"),
        (b"just some text, honestly\n" * 20, "notes.png", "invalid_type"),
        (image_bytes("PNG")[:-40], "cut.png", "invalid_string"),
        (image_bytes("JPEG")[:-200], "cut.jpg", "invalid_string"),
        (image_bytes("BMP"), "old.bmp", "invalid_type"),
        (image_bytes("TIFF"), "scan.png", "invalid_type"),
        (_png_header_only(8001, 10), "wide.png", "too_big"),
        (_png_header_only(10, 8001), "tall.png", "too_big"),
        (_png_header_only(100_000, 100_000), "bomb.png", "too_big"),
        (b"", "empty.png", "too_small"),
    ],
)
def test_anything_else_is_refused_at_file(secret_client, media, content, name, code):
    response = upload(secret_client, content, name=name)
    assert response.status_code == 422, response.json()
    [error] = response.json()["error"]["errors"]
    assert (error["field"], error["code"]) == ("file", code)
    assert stored(media) == []


def test_8000_px_a_side_is_accepted(secret_client):
    content = image_bytes("PNG", size=(8000, 1))
    assert upload(secret_client, content).status_code == 201


def test_more_than_5_mb_is_413(secret_client, media):
    limit = django_settings.UPLOAD_IMAGE_MAX_BYTES
    # A real PNG start padded to one byte over the limit: judged by its size before its content.
    content = image_bytes("PNG") + os.urandom(limit + 1 - len(image_bytes("PNG")))
    response = upload(secret_client, content)
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "PAYLOAD_TOO_LARGE" and error["details"]["maxBytes"] == limit
    assert stored(media) == []


def test_exactly_5_mb_is_judged_by_content(secret_client):
    limit = django_settings.UPLOAD_IMAGE_MAX_BYTES
    padded = image_bytes("PNG")
    padded += b"\0" * (limit - len(padded))  # trailing bytes after IEND: still a whole PNG
    assert upload(secret_client, padded).status_code == 201


def test_a_missing_file_is_422_and_no_key_is_401(secret_client, anon_client):
    response = secret_client.post("/uploads/image", {"other": "x"}, format="multipart")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "file"
    assert upload(anon_client, image_bytes("PNG")).status_code == 401


def test_the_public_key_cannot_upload(public_client):
    response = upload(public_client, image_bytes("PNG"))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "INVALID_API_KEY"


def test_only_uploaded_names_are_served(anon_client, media):
    (media / "images").mkdir(parents=True)
    (media / "secret.txt").write_text("no")
    assert anon_client.get("/media/secret.txt").status_code == 404
    assert anon_client.get("/media/images/../secret.txt").status_code == 404
    assert anon_client.get("/media/images/AAAAAAAAAAAAAAAAAAAAAAAA.png").status_code == 404


def test_the_storage_is_s3_when_a_bucket_is_configured():
    """The settings choose the backend at start-up: a process with a bucket stores through django-storages."""
    code = (
        "import django; django.setup(); from django.core.files.storage import storages; "
        "s = storages['default']; print(type(s).__module__, getattr(s, 'bucket_name', '-'))"
    )
    cases = (("herald-images", "storages.backends.s3 herald-images"), ("", "django.core.files.storage.filesystem -"))
    for bucket, expected in cases:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "AWS_STORAGE_BUCKET_NAME": bucket}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert result.stdout.strip() == expected, result.stderr


def _png_of_zeros(width: int, height: int) -> bytes:
    """A valid black RGB PNG of any size, compressed row by row so that making it costs no memory: 8000x8000 is
    about 190 KB on disk and 192 MB decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + 3 * width)
    data = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def _peak_kb() -> int:
    return int(next(line for line in Path("/proc/self/status").open() if line.startswith("VmHWM")).split()[1])


def test_an_image_past_the_pixel_limit_is_refused_from_its_header_without_decoding(secret_client, media):
    content = _png_of_zeros(8000, 8000)  # within 8,000 px a side, but 64 million pixels
    assert len(content) < 300 * 1024
    Path("/proc/self/clear_refs").write_text("5")  # the peak resident size starts again from the current size
    before = _peak_kb()
    response = upload(secret_client, content)
    grown_mb = (_peak_kb() - before) / 1024
    assert response.status_code == 422, response.json()
    [error] = response.json()["error"]["errors"]
    assert (error["field"], error["code"]) == ("file", "too_big")
    assert "8000x8000" in error["message"] and "at most 40,000,000 pixels" in error["message"]
    assert grown_mb < 20, f"checking the upload grew the process by {grown_mb:.0f} MB"  # decoded: 192 MB
    assert stored(media) == []


def test_the_pixel_limit_is_a_setting(secret_client, settings):
    settings.UPLOAD_IMAGE_MAX_PIXELS = 40 * 25
    assert upload(secret_client, image_bytes("PNG", size=(40, 25))).status_code == 201
    response = upload(secret_client, image_bytes("PNG", size=(40, 26)))
    assert response.status_code == 422
    assert "at most 1,000 pixels" in response.json()["error"]["errors"][0]["message"]


def test_each_project_has_its_own_upload_storage_quota(secret_client, other_project, media, settings):
    from conftest import client_with

    content = image_bytes("PNG")
    settings.UPLOAD_STORAGE_QUOTA_BYTES = 2 * len(content) + 10
    theirs = client_with(other_project.keys.secret_key)
    assert [upload(secret_client, content).status_code for _ in range(2)] == [201, 201]

    refused = upload(secret_client, content)
    assert refused.status_code == 413
    error = refused.json()["error"]
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert error["details"] == {
        "field": "file",
        "quotaBytes": 2 * len(content) + 10,
        "usedBytes": 2 * len(content),
        "size": len(content),
    }
    assert len(stored(media)) == 2
    # The other project's uploads count only against its own quota: it still has all of it, then no more.
    assert [upload(theirs, content).status_code for _ in range(3)] == [201, 201, 413]
    assert len(stored(media)) == 4


def test_a_browser_session_uploads_with_its_csrf_token(project, media, settings):
    from conftest import persona_client

    browser = persona_client(project, "session")
    response = upload(browser, image_bytes("PNG"))
    assert response.status_code == 201, response.content
    # Past the limit through a session too: the answer is 413, not a server error.
    settings.UPLOAD_IMAGE_MAX_BYTES = 1000
    refused = upload(browser, b"\x89PNG" + b"\0" * 2000)
    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    # Without the token the session is refused, and nothing more is stored.
    browser.credentials(HTTP_X_PROJECT_ID=str(project.id))
    assert upload(browser, image_bytes("PNG")).status_code == 403
    assert len(stored(media)) == 1
