"""DKIM signing speed: `domains.dkim.sign` (dkimpy through `domains.dkim_adapter`) against dkimpy alone (its public
`dkim.sign` with its own RSA step and key parsing), in one process, on a 5 KB HTML message with a text part signed
with an RSA-2048 key. CPU time per signature; run it again after upgrading dkimpy.

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

from bench.delivery import five_kb_html  # noqa: E402
from bench.serve import machine  # noqa: E402
from domains import dkim as domain_dkim  # noqa: E402
from domains import dkim_adapter  # noqa: E402


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
    replaced = {name: getattr(dkim, name) for name in dkim_adapter.REPLACED}
    originals = {name: getattr(dkim.crypto, name) for name in dkim_adapter.REPLACED}

    def adapter():
        domain_dkim.sign(message=raw, selector="hr-bench1", domain_name="alice.test", private_key_encrypted=encrypted)

    def dkimpy_alone():
        dkim.sign(raw, b"hr-bench1", b"alice.test", pem, canonicalize=(b"relaxed", b"simple"), include_headers=signed)

    adapter_ms, dkimpy_ms = [], []
    for _ in range(args.runs):
        adapter_ms.append(cpu_ms_per_call(adapter, args.signatures))
        for name, function in originals.items():
            setattr(dkim, name, function)
        try:  # dkimpy alone is ten times slower: a tenth of the signatures
            dkimpy_ms.append(cpu_ms_per_call(dkimpy_alone, max(args.signatures // 10, 20)))
        finally:
            for name, function in replaced.items():
                setattr(dkim, name, function)
    print(
        json.dumps(
            {
                "benchmark": "dkim_sign",
                "message_bytes": len(raw),
                "dkimpy": dkim_adapter.DKIMPY_VERSION,
                "adapter_installed": dkim_adapter.installed,
                "median_cpu_ms_per_signature": {
                    "adapter": round(statistics.median(adapter_ms), 3),
                    "dkimpy_alone": round(statistics.median(dkimpy_ms), 3),
                },
                "runs": {
                    "adapter": [round(v, 3) for v in adapter_ms],
                    "dkimpy_alone": [round(v, 3) for v in dkimpy_ms],
                },
                "machine": machine(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
