"""What a run needs from a cognitive architecture (adapter.py), and our OODA engine as one
(ooda.py); Soar is the second (engine/soar/adapter.py)."""
