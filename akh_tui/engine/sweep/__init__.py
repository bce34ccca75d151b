"""Sweeps: many headless runs over scenarios, seeds and settings; their store, the Dask client and
the report."""
