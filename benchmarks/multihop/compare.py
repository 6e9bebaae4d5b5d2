"""Leads of saved multihop reports over their strongest simple baseline, and the share of one
run's lead another keeps (see :mod:`benchmarks.multihop.leads`)::

    python -m benchmarks.multihop.compare bench_out/multihop_musique_train100_words.json
    python -m benchmarks.multihop.compare minilm.json mpnet.json   # mpnet's share of MiniLM's

No network, no index: the reports' per-question lists only. Exits with 2 when the two reports
cannot be compared (other questions, no baseline row, no lead to share).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.multihop.leads import leads_table, share
from benchmarks.multihop.methods import GRAPH


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.multihop.compare",
        description="Each graph method's lead over the strongest simple baseline of a "
                    "saved multihop report, with a 95% paired bootstrap interval; given two "
                    "reports of the same questions, the share of the first's lead the "
                    "second keeps.")
    parser.add_argument("reports", nargs="+", type=Path, help="report JSON files (1 or 2)")
    parser.add_argument("--method", default=None,
                        help="the graph row whose share is computed (default: the first "
                             "graph row both reports have)")
    args = parser.parse_args(argv)
    if len(args.reports) > 2:
        parser.error("give one report, or two of the same questions")
    try:
        reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.reports]
    except (OSError, json.JSONDecodeError) as exc:
        parser.error(f"cannot read a report: {exc}")
    for path, report in zip(args.reports, reports, strict=True):
        if not (isinstance(report, dict) and report.get("benchmark") == "multihop"
                and {"config", "methods", "per_question"} <= set(report)):
            parser.error(f"{path} is not a report of python -m benchmarks.multihop (its "
                         "multihop_<dataset>_<tag>.json)")
    for path, report in zip(args.reports, reports, strict=True):
        print(f"{path}:")
        print("\n".join(leads_table(report)) or "(no baseline or no graph row)")
    if len(reports) == 2:
        common = [m["name"] for m in reports[0]["methods"] if m["kind"] == GRAPH
                  and m["name"] in reports[1]["per_question"]]
        method = args.method or (common[0] if common else None)
        if method is None:
            parser.error("the two reports share no graph row")
        for k in reports[0]["config"]["ks"]:
            try:
                kept = share(reports[0], reports[1], method, k)
                print(f"{method}, R@{k}: the second keeps {kept.value:.0f}% of the first's "
                      f"lead (95% interval {kept.low:.0f}% to {kept.high:.0f}%)")
            except ValueError as exc:
                print(f"share at R@{k}: {exc}", file=sys.stderr)
                return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
