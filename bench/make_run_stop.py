"""How long `make run` takes to stop: Ctrl-C (SIGINT to its process group, as a terminal sends it) until the last
process it started is gone, on the embedded defaults, each round in a fresh copy of the checkout.

    python bench/make_run_stop.py [--rounds 5] [--base REV] [--signal INT|TERM]

With `--base`, the same rounds run alternately on that revision (checked out beside this tree as `bench/compare.py`
does), so both are measured in the same minutes; the ratio is this tree's median over the base's.
"""

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

from bench.compare import checkout
from bench.serve import machine
from config.tests.make_run import alive, answers, descendants, kill_all, make_run
from config.tests.processes import ROOT, free_port, wait_until


def stop_seconds(tree: Path, signal_number: int) -> float:
    with tempfile.TemporaryDirectory(prefix="herald-make-run-") as folder:
        port = free_port()
        make, log = make_run(Path(folder), source_tree=tree, PORT=str(port))
        try:
            wait_until(lambda: answers(port), timeout=180, what="make run to answer /health")
            wait_until(lambda: log.read_text().count("ready.") >= 2, timeout=60, what="the Celery workers")
            time.sleep(2)  # beat's first tick and the workers' start-up exchanges are over: an idle service
            started = descendants(make.pid)
            signalled = time.monotonic()
            os.killpg(make.pid, signal_number)
            wait_until(lambda: not alive(started), timeout=60, what="every process to end")
            return time.monotonic() - signalled
        finally:
            kill_all(make)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", help="a revision to measure alternately")
    parser.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    args = parser.parse_args()
    signal_number = getattr(signal, f"SIG{args.signal}")
    trees = {"this": ROOT, **({"base": checkout(args.base)} if args.base else {})}
    runs = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(round(stop_seconds(tree, signal_number), 2))
    result = {"signal": f"SIG{args.signal}", "runs": runs, "median_stop_seconds": statistics.median(runs["this"])}
    if args.base:
        result["base"] = args.base
        result["base_median_stop_seconds"] = statistics.median(runs["base"])
        result["ratio"] = round(result["median_stop_seconds"] / result["base_median_stop_seconds"], 2)
    result["machine"] = machine()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
