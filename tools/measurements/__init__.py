"""The measurements ``python -m tools.measure NAME`` runs, one module each."""
