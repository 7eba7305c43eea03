"""DKIM signing speed: `domains.dkim.sign` against dkimpy (its public `dkim.sign`, with its own RSA step and key
parsing) and against the RSA-2048 signature alone through OpenSSL (the floor: what no signer can save), in one
process, on a 5 KB HTML message with a text part. CPU time per signature.

    python bench/dkim_sign.py [--signatures 2000]
"""

import argparse
import json
import os
import statistics
import sys
import time
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

import django

django.setup()

import dkim  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding  # noqa: E402

from bench.delivery import five_kb_html  # noqa: E402
from bench.serve import machine  # noqa: E402
from domains import dkim as domain_dkim  # noqa: E402


def message() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Alice <news@alice.test>"
    msg["To"] = "bob@example.net"
    msg["Subject"] = "Your weekly digest"
    msg["Date"] = "Sun, 22 Nov 2026 01:02:03 +0000"
    msg["Message-ID"] = "<1@alice.test>"
    msg["List-Unsubscribe"] = "<https://mail.example.test/unsubscribe/token>"
    msg.set_content("Hello Bob,\n" + "A line of the digest in plain text.\n" * 60, cte="quoted-printable")
    msg.add_alternative(five_kb_html("Bob"), subtype="html", cte="quoted-printable")
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def cpu_ms_per_call(call, count: int) -> float:
    call()
    started = time.process_time()
    for _ in range(count):
        call()
    return (time.process_time() - started) / count * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--signatures", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    raw = message()
    _, encrypted = domain_dkim.generate_key_pair()
    pem = domain_dkim.decrypt_private_key(encrypted)
    present = {name.lower() for name, _ in dkim.rfc822_parse(raw)[0]}
    signed = [name for name in domain_dkim.SIGNED_HEADERS if name in present]
    key = serialization.load_pem_private_key(pem, password=None)

    def herald():
        domain_dkim.sign(message=raw, selector="hr-bench1", domain_name="alice.test", private_key_encrypted=encrypted)

    def dkimpy_alone():
        dkim.sign(raw, b"hr-bench1", b"alice.test", pem, canonicalize=(b"relaxed", b"simple"), include_headers=signed)

    def rsa_alone():
        key.sign(raw[:600], padding.PKCS1v15(), hashes.SHA256())

    runs = {"herald": [], "dkimpy": [], "rsa_2048_alone": []}
    for _ in range(args.runs):
        runs["herald"].append(cpu_ms_per_call(herald, args.signatures))
        # dkimpy alone is ten times slower: a tenth of the signatures
        runs["dkimpy"].append(cpu_ms_per_call(dkimpy_alone, max(args.signatures // 10, 20)))
        runs["rsa_2048_alone"].append(cpu_ms_per_call(rsa_alone, args.signatures))
    print(
        json.dumps(
            {
                "benchmark": "dkim_sign",
                "message_bytes": len(raw),
                "median_cpu_ms_per_signature": {name: round(statistics.median(v), 3) for name, v in runs.items()},
                "runs": {name: [round(x, 3) for x in v] for name, v in runs.items()},
                "machine": machine(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
