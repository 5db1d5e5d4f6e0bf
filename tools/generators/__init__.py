"""The generators ``python -m tools.regenerate TARGET`` runs, one module each."""
