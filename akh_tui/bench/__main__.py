"""`python -m akh_tui.bench PART ARG`: one figure measured in a fresh process (bench --engine runs these)."""

import json
import sys

from .main import engine_part

print(json.dumps(engine_part(sys.argv[1], sys.argv[2])))
