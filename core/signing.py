"""Django's `Signer` with its HMAC key derived once per key instead of on every signature.

Django derives the HMAC key from the salt and the secret (a SHA-256 of both) and builds a new HMAC for each value; a
tracked email signs its open pixel and each of its links on the send path, and the derivation was most of a
signature's cost (57k instructions per open token). The signatures are the same bytes, so tokens made before and
after verify alike, and `unsign` with `SECRET_KEY_FALLBACKS` works as Django's does.
"""

import hashlib
import hmac

from django.core import signing
from django.utils.encoding import force_bytes


class Signer(signing.Signer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._prototypes: dict[str, hmac.HMAC] = {}

    def signature(self, value, key=None):
        key = key or self.key
        prototype = self._prototypes.get(key)
        if prototype is None:
            # salted_hmac's key: the digest of the salt (`<salt>signer`) and the secret.
            hasher = getattr(hashlib, self.algorithm)
            derived = hasher(force_bytes(self.salt + "signer") + force_bytes(key)).digest()
            prototype = self._prototypes[key] = hmac.new(derived, digestmod=hasher)
        mac = prototype.copy()
        mac.update(force_bytes(value))
        return signing.b64_encode(mac.digest()).decode()
