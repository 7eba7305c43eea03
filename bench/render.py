"""Rendering speed of the one rendering module: a typical 5 KB HTML template (five variables, a default, a
condition, the unsubscribe link) plus its subject, for distinct recipients, in one process.

    python bench/render.py [--renders 50000]

`--compile` measures compiling instead (lexing and parsing the template: what saving one costs, through
`check_syntax`, and the first send of each), a distinct copy of the template each time so that none is cached;
`--unclosed N` compiles a template whose `{{` is never closed and is followed by N spaces instead (refused with a
syntax error), the input on which a backtracking lexer is quadratic. `--callgrind` counts the CPU instructions of
the measured runs alone, under `valgrind --tool=callgrind --instr-atstart=no` (`grep totals` of its out-file's
dump, divided by the renders).
"""

import argparse
import contextlib
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
from bench.serve import callgrind, machine  # noqa: E402
from core.errors import ValidationFailed  # noqa: E402
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
    parser.add_argument("--compile", action="store_true", help="compile distinct copies instead of rendering")
    parser.add_argument("--unclosed", type=int, metavar="N", help="compile a `{{` followed by N spaces instead")
    parser.add_argument("--callgrind", action="store_true", help="instrument only the measured runs")
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

    def render(i: int) -> None:
        rendering.render_email(subject=SUBJECT, body=BODY, scope=scopes[i % 1000], lenient=True)

    def compile_copy(i: int) -> None:
        rendering.check_syntax(field="body", source=f"{BODY}<!-- {i} -->", html=True)

    def compile_unclosed(i: int) -> None:
        with contextlib.suppress(ValidationFailed):
            rendering.check_syntax(field="body", source=f"<p>{i}</p>{{{{" + " " * args.unclosed, html=True)

    step = compile_unclosed if args.unclosed else compile_copy if args.compile else render
    step(-1)  # warm-up: imports, the environment
    if args.callgrind:
        callgrind(True)
    rates = []
    for run in range(args.runs):
        started = time.perf_counter()
        for i in range(args.renders):
            step(run * args.renders + i)
        rates.append(args.renders / (time.perf_counter() - started))
    if args.callgrind:
        callgrind(False, dump="render")
    print(
        json.dumps(
            {
                "benchmark": "compile" if args.compile or args.unclosed else "render",
                "template_bytes": len(BODY),
                "renders_per_run": args.renders,
                "median_renders_per_second": round(statistics.median(rates)),
                "median_ms_per_render": round(1000 / statistics.median(rates), 3),
                "runs": [round(r) for r in rates],
                "machine": machine(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
