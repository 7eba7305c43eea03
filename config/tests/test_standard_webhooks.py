"""Standard Webhooks signatures and secrets."""

import base64
import time

from core.standard_webhooks import secret_generate, signature_headers
from messaging.feedback.signatures import svix_signature_valid


def test_the_published_standard_webhooks_vector():
    # standard-webhooks/standard-webhooks, libraries/python/tests/test_webhooks.py, test_sign_function.
    headers = signature_headers(
        secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        webhook_id="msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestamp=1614265330,
        body=b'{"test": 2432232314}',
    )

    assert headers == {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }


def test_a_generated_secret_is_whsec_and_32_random_bytes():
    first, second = secret_generate(), secret_generate()

    assert first.startswith("whsec_")
    assert len(base64.b64decode(first.removeprefix("whsec_"), validate=True)) == 32
    assert first != second


def test_a_generated_secret_signs_what_an_independent_verifier_accepts():
    secret, body = secret_generate(), b'{"event": "signup", "n": 1}'
    headers = signature_headers(secret=secret, webhook_id="msg_1", timestamp=int(time.time()), body=body)
    as_svix = {name.replace("webhook-", "svix-"): value for name, value in headers.items()}

    assert svix_signature_valid(secret=secret, headers=as_svix, body=body, tolerance=300)
    assert not svix_signature_valid(secret=secret, headers=as_svix, body=body + b" ", tolerance=300)
    assert not svix_signature_valid(secret=secret_generate(), headers=as_svix, body=body, tolerance=300)
