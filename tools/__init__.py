"""Entry points and measurements of portcv's repository tools (see tools/README.md)."""
