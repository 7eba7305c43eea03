"""Settings for `bench/api_overhead.py --probe`: the service plus the test suite's probe routes."""

from config.settings.base import *  # noqa: F403

ROOT_URLCONF = "config.tests.probe_urls"
