"""Run one benchmark on this tree and on another revision, alternately, and print each figure side by side with
its ratio: the same benchmark of the previous code, measured in the same minutes, is the peer of a change.

    python bench/compare.py --base c2853c6 [--rounds 2] -- send_accept.py --seconds 15 --runs 1
    python bench/compare.py --base main~3 -- render.py --renders 30000

The other revision is checked out once into `/tmp/herald-bench-base-<rev>` (a detached git worktree) and run with this
tree's Python environment. Rounds alternate (this, base, this, base, ...) so that a machine that slows down or
speeds up during the run weighs on both sides alike. Every numeric top-level figure the script prints (its JSON's
`median_*` and other numbers) is reported as the median over rounds, base, this tree and this/base.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout(revision: str) -> Path:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", revision], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    folder = Path("/tmp") / f"herald-bench-base-{sha}"
    if not folder.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(folder), sha], cwd=ROOT, check=True, stdout=sys.stderr
        )
    return folder


def run(tree: Path, script: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, str(tree / "bench" / script[0]), *script[1:]], cwd=tree, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(script)} failed:\n{out.stderr[-3000:]}")
    # The result is the last JSON object printed.
    text = out.stdout
    return json.loads(text[text.rindex("\n{") + 1 :] if "\n{" in text else text[text.index("{") :])


def numbers(result: dict) -> dict[str, float]:
    return {
        key: value for key, value in result.items() if isinstance(value, int | float) and not isinstance(value, bool)
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the revision to compare with (e.g. main~1, a commit)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- <script in bench/> [its arguments]")
    args = parser.parse_args()
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    base = checkout(args.base)
    rounds: dict[str, list[dict]] = {"this": [], "base": []}
    for _ in range(args.rounds):
        rounds["this"].append(run(ROOT, script))
        rounds["base"].append(run(base, script))
    figures = {}
    for key in numbers(rounds["this"][0]):
        this = statistics.median(numbers(r).get(key, 0) for r in rounds["this"])
        then = statistics.median(numbers(r).get(key, 0) for r in rounds["base"])
        figures[key] = {"this": this, "base": then, "ratio": round(this / then, 3) if then else None}
    print(
        json.dumps(
            {
                "benchmark": " ".join(script),
                "base": args.base,
                "rounds": args.rounds,
                "machine": rounds["this"][0].get("machine"),
                "figures": figures,
                "this_runs": rounds["this"],
                "base_runs": rounds["base"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
