"""The login lockout holds under concurrency: parallel wrong guesses for one address, each request on its own
thread and database connection, never get more passwords checked than the limit allows."""

import threading

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection

from accounts.models import User
from conftest import browser_client, concurrently

GUESSES = 40


class CountingSlowHasher(PBKDF2PasswordHasher):
    """PBKDF2 at a cost that keeps each check busy for a few milliseconds, as a real login's is, counting checks."""

    algorithm = "pbkdf2_counting"
    iterations = 20_000
    calls = 0
    lock = threading.Lock()

    def encode(self, password, salt, iterations=None):
        with CountingSlowHasher.lock:
            CountingSlowHasher.calls += 1
        return super().encode(password, salt, iterations)


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_guesses_check_at_most_the_limit(project, redis_cache, settings):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent requests, each on its own connection, need PostgreSQL")
    settings.PASSWORD_HASHERS = ["accounts.tests.test_login_lockout_concurrency.CountingSlowHasher"]
    alice = User.objects.get(email="alice@example.test")
    alice.set_password("the right passphrase")
    alice.save()
    CountingSlowHasher.calls = 0

    def guess(n):
        response = browser_client().post("/auth/login", {"email": "alice@example.test", "password": f"guess {n}"})
        return response.status_code

    statuses = concurrently(guess, range(GUESSES), threads=GUESSES)
    limit = settings.LOGIN_FAILURE_LIMIT
    assert sorted(statuses) == [401] * limit + [429] * (GUESSES - limit)
    assert CountingSlowHasher.calls == limit
    right = browser_client().post("/auth/login", {"email": "alice@example.test", "password": "the right passphrase"})
    assert right.status_code == 429
