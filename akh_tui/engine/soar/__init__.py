"""Soar agents behind the same door: soar-sml's kernel (kernel.py), a `.soar` file read as
untrusted input (source.py), the architecture adapter over one Soar agent (adapter.py), Soar
scenarios (scenario.py) and a recorded Soar run with time travel (run.py)."""
