"""`core.signing.Signer` signs as Django's Signer does, so links and tokens already sent keep verifying."""

import pytest
from django.core import signing

from core.signing import Signer


@pytest.mark.parametrize("value", ["0190b9c2-1f2e-7d3c-9a4b-5c6d7e8f9a0b", "", "é中 with spaces:and:colons"])
def test_signatures_are_djangos(value):
    ours, djangos = Signer(salt="herald.test"), signing.Signer(salt="herald.test")
    assert ours.sign(value) == djangos.sign(value)
    assert djangos.unsign(ours.sign(value)) == value
    assert ours.unsign(djangos.sign(value)) == value
    assert ours.sign_object({"v": value}) == djangos.sign_object({"v": value})


def test_a_token_of_another_salt_or_an_altered_one_is_refused():
    token = Signer(salt="herald.a").sign("x")
    with pytest.raises(signing.BadSignature):
        Signer(salt="herald.b").unsign(token)
    with pytest.raises(signing.BadSignature):
        Signer(salt="herald.a").unsign(token[:-1] + ("A" if token[-1] != "A" else "B"))


def test_a_token_signed_under_a_former_secret_verifies_while_it_is_a_fallback(settings):
    settings.SECRET_KEY_FALLBACKS = []
    old = Signer(salt="herald.test", key="former-secret").sign("x")
    assert Signer(salt="herald.test", key="new-secret", fallback_keys=["former-secret"]).unsign(old) == "x"
    with pytest.raises(signing.BadSignature):
        Signer(salt="herald.test", key="new-secret", fallback_keys=[]).unsign(old)
