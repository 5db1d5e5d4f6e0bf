"""Make a published asv dashboard work offline: local copies of the CDN assets it loads.

asv 0.6's ``index.html`` loads jQuery, flot (+ plugins), stupidtable, blueimp-md5 and Bootstrap
from CDNs and redirects to ``error.html`` when one fails, so on a machine with no network the
dashboard shows only the error page. This post-publish step

1. copies ``asv_bench/vendor/`` (the npm files, their licenses, ``manifest.json``) to
   ``HTML_DIR/vendor/``;
2. rewrites, in every ``.html`` file of the site, each ``<script src>`` / ``<link href>`` that
   ``manifest.json`` lists to its local copy, dropping the tag's ``integrity``, ``crossorigin``
   and ``referrerpolicy`` attributes (same-origin files; three of them are not byte-identical to
   the CDN's, see ``asv_bench/vendor/README.md``);
3. fails (exit 1) if a ``<script>`` or ``<link>`` still points off the site, naming it, so a new
   asv with a new CDN asset is caught rather than shipped half-offline.

Usage (``portcv bench --html DIR`` runs it after ``asv publish``)::

    cd asv_bench && asv publish --html-dir /tmp/dash
    python tools/asv_offline.py /tmp/dash
    python -m http.server --bind 127.0.0.1 8080 --directory /tmp/dash

Running it twice is harmless.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

VENDOR_DIR = Path(__file__).resolve().parents[1] / "asv_bench" / "vendor"
#: Where the assets go inside the published site.
SITE_VENDOR = "vendor"

_TAG = re.compile(r"<(script|link)\b[^>]*>", re.IGNORECASE)
_URL_ATTR = re.compile(r"""\b(src|href)\s*=\s*(["'])([^"']*)\2""", re.IGNORECASE)
_DROP_ATTRS = re.compile(r"""\s+(integrity|crossorigin|referrerpolicy)(\s*=\s*(["'])[^"']*\3)?""", re.IGNORECASE)
_REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)


def load_manifest(vendor_dir: Path = VENDOR_DIR) -> dict[str, str]:
    """CDN URL -> path of the local copy relative to ``vendor_dir``."""
    with open(vendor_dir / "manifest.json", encoding="utf-8") as f:
        manifest = json.load(f)
    return {a["cdn_url"]: a["local"] for a in manifest["assets"]}


def rewrite_html(text: str, urls: dict[str, str], prefix: str) -> tuple[str, list[str], list[str]]:
    """``text`` with each listed CDN URL in a script/link tag replaced by ``prefix + local``.

    Returns the new text, the URLs replaced, and the remote URLs left in script/link tags.
    """
    replaced: list[str] = []
    remote: list[str] = []

    def fix_tag(match: re.Match) -> str:
        tag = match.group(0)
        found = _URL_ATTR.search(tag)
        if not found:
            return tag
        url = found.group(3)
        if url in urls:
            replaced.append(url)
            new_attr = f"{found.group(1)}={found.group(2)}{prefix}{urls[url]}{found.group(2)}"
            tag = tag[: found.start()] + new_attr + tag[found.end():]
            return _DROP_ATTRS.sub("", tag)
        if _REMOTE.match(url):
            is_script = match.group(1).lower() == "script"
            is_stylesheet = re.search(r"""rel\s*=\s*["']?stylesheet""", tag, re.IGNORECASE) is not None
            if is_script or is_stylesheet:
                remote.append(url)
        return tag

    return _TAG.sub(fix_tag, text), replaced, remote


def make_offline(html_dir: str | os.PathLike, vendor_dir: str | os.PathLike = VENDOR_DIR) -> dict[str, list[str]]:
    """Vendor the assets into ``html_dir`` and rewrite its html files; see the module docstring.

    Returns ``{"rewritten": [files changed], "remote": ["file: url" left pointing off-site]}``.
    """
    html_dir, vendor_dir = Path(html_dir), Path(vendor_dir)
    if not (html_dir / "index.html").is_file():
        raise FileNotFoundError(f"{html_dir} has no index.html: run `asv publish` first")
    urls = load_manifest(vendor_dir)
    target = html_dir / SITE_VENDOR
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(vendor_dir, target, ignore=shutil.ignore_patterns("__pycache__"))
    for local in urls.values():
        if not (target / local).is_file():
            raise FileNotFoundError(f"manifest.json lists {local}, missing from {vendor_dir}")

    rewritten, remote = [], []
    for page in sorted(html_dir.rglob("*.html")):
        if target in page.parents:
            continue
        rel = os.path.relpath(target, page.parent).replace(os.sep, "/")
        text = page.read_text(encoding="utf-8")
        new, replaced, left = rewrite_html(text, urls, rel + "/")
        if new != text:
            page.write_text(new, encoding="utf-8")
            rewritten.append(str(page))
        remote += [f"{page}: {url}" for url in left]
    return {"rewritten": rewritten, "remote": remote}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html_dir", help="the folder `asv publish` wrote (with index.html)")
    parser.add_argument("--vendor", default=str(VENDOR_DIR), help="folder with manifest.json and the assets")
    args = parser.parse_args(argv)
    try:
        report = make_offline(args.html_dir, args.vendor)
    except FileNotFoundError as exc:
        print(f"asv_offline: error: {exc}", file=sys.stderr)
        return 1
    for page in report["rewritten"]:
        print(f"asv_offline: rewrote {page}")
    if report["remote"]:
        print("asv_offline: error: these pages still load assets from the network (add them to "
              "asv_bench/vendor/manifest.json):", file=sys.stderr)
        for line in report["remote"]:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"asv_offline: {args.html_dir} loads no assets from the network")
    return 0


if __name__ == "__main__":
    sys.exit(main())
