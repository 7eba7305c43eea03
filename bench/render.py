"""Rendering speed of the one rendering module: a typical 5 KB HTML template (five variables, a default, a
condition, the unsubscribe link) plus its subject, for distinct recipients, in one process.

    python bench/render.py [--renders 50000]
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
os.environ.setdefault("SECRET_KEY", "bench-secret-key-not-for-production-0123456789")

import django

django.setup()

from bench.delivery import PARAGRAPH  # noqa: E402
from bench.serve import machine  # noqa: E402
from messaging.content import rendering  # noqa: E402

SUBJECT = "{{ first_name ?? 'Hello' }}, your {{ plan }} plan renews soon"
BODY = (
    "<html><body><h1>Hi {{ first_name | default: 'there' }}</h1>"
    + PARAGRAPH * 22
    + "<p>Your plan: <b>{{ plan }}</b> ({{ seats }} seats)</p>"
    + "{% if company %}<p>Billed to {{ company }}</p>{% endif %}"
    + '<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p></body></html>'
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--renders", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    scopes = [
        {
            "first_name": f"Ann{i}",
            "plan": "pro",
            "seats": i % 50,
            "company": "Acme" if i % 2 else "",
            "unsubscribeUrl": f"https://mail.example.test/unsubscribe/token{i}",
        }
        for i in range(1000)
    ]
    rates = []
    for _ in range(args.runs):
        started = time.perf_counter()
        for i in range(args.renders):
            rendering.render_email(subject=SUBJECT, body=BODY, scope=scopes[i % 1000], lenient=True)
        rates.append(args.renders / (time.perf_counter() - started))
    print(
        json.dumps(
            {
                "benchmark": "render",
                "template_bytes": len(BODY),
                "renders_per_run": args.renders,
                "median_renders_per_second": round(statistics.median(rates)),
                "runs": [round(r) for r in rates],
                "machine": machine(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
