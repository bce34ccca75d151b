"""The real local model end to end (`make test-model`): collected only with AKH_TEST_MODEL=1, so
the ordinary suite never needs the model (it replays stubs and committed cassettes)."""

import os

collect_ignore_glob = [] if os.environ.get("AKH_TEST_MODEL") else ["test_*.py"]
