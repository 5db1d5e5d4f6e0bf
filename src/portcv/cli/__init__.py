"""The ``portcv`` command line: the parser; each command is defined in its own module (``_demo``, ``_bench``, ...)."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import portcv

from ._common import Parser


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="portcv", description="portcv: computer vision bit-exact on NumPy, CuPy and JAX")
    parser.add_argument("--version", action="version", version=f"portcv {portcv.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    # Each command is defined in its own module; the domain commands sit next to the code they drive.
    from ._bench import _add_bench_command  # `portcv bench`
    from ._demo import _add_demo_command  # `portcv demo`
    from ._faces import _add_faces_command  # `portcv faces IMAGE_OR_VIDEO`
    from ._motion import _add_motion_command  # `portcv motion`
    from ._stream import _add_stream_command  # `portcv stream serve|view`
    from ._verify import _add_verify_command  # `portcv verify`

    _add_demo_command(sub)
    _add_bench_command(sub)
    _add_motion_command(sub)
    _add_stream_command(sub)
    _add_faces_command(sub)
    _add_verify_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"portcv {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, OverflowError, ImportError, RuntimeError) as exc:
        # What a user can cause (bad values, files, ports, missing backends): one line, exit 2.
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"portcv {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
