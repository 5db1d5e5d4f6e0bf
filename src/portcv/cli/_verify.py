"""``portcv verify``: rerun the shipped golden cases on this machine's backends; print and certify the verdicts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import portcv


def _add_verify_command(sub: Any) -> None:
    p = sub.add_parser("verify", help="check that every op gives the shipped bits here (backends, threads, OpenCV)",
                       description="Rerun the golden cases shipped with portcv on each backend (the NumPy backend at "
                                   "each thread count), compare every output's SHA-256 with the shipped one and with "
                                   "OpenCV's where portcv claims OpenCV's bits; exit 1 on any difference.")
    p.add_argument("--backends", default=None,
                   help="comma-separated (default: every registered backend; those that cannot run are 'not run')")
    p.add_argument("--threads", default=None,
                   help="NumPy thread counts, comma-separated, e.g. 1,2,8; 'all' is every core (default: 1,all)")
    p.add_argument("--ops", default=None, help="fnmatch patterns of cases, comma-separated, e.g. 'filters.*' (default: all)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the JSON certificate here (default: none)")
    p.add_argument("--no-opencv", action="store_true", help="do not compare with OpenCV")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=verify)


def verify(args: argparse.Namespace) -> int:
    """Run :func:`portcv.verify` with the command's options; print the table; 0 if all identical, else 1."""
    report = portcv.verify(backends=args.backends, threads=args.threads, ops=args.ops, opencv=not args.no_opencv,
                           json_path=args.json, progress=not args.no_progress)
    env = report.environment
    devices = sorted({d for entry in env["backends"].values() for d in entry.get("devices", []) if not d.startswith("cpu")})
    print(f"portcv {env['portcv']} ({env['portcv_commit'] or 'no git commit'}) verify on {env['cpu']}"
          + (f", devices: {', '.join(devices)}" if devices else "")
          + (f"; OpenCV {report.opencv['version']}" if report.opencv.get("version") else ""))
    print(report.table())
    if report.opencv.get("changes_with_threads"):
        print(f"OpenCV's own output changed with its thread count on: {', '.join(report.opencv['changes_with_threads'])}")
    if args.json:
        print(f"certificate: {args.json}")
    sys.stdout.flush()
    return 0 if report.ok else 1
