"""`python -m akh_tui.cli`: the same as `akh-tui` (serve starts its tabs this way)."""

import sys

from .root import main

sys.exit(main())
