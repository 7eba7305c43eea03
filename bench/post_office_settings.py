"""Minimal Django settings for the django-post_office side of bench/delivery.py (same sink, same database server)."""

import os

import environ

SECRET_KEY = "bench-only"
INSTALLED_APPS = ["django.contrib.contenttypes", "post_office"]
DATABASES = {"default": environ.Env.db_url_config(os.environ["DATABASE_URL"])}
USE_TZ = True
EMAIL_BACKEND = "post_office.EmailBackend"
POST_OFFICE = {
    "BACKENDS": {"default": "django.core.mail.backends.smtp.EmailBackend"},
    "BATCH_SIZE": 1000,
    "LOG_LEVEL": 0,
}
EMAIL_HOST = "127.0.0.1"
EMAIL_PORT = int(os.environ.get("SINK_PORT", "2526"))
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
