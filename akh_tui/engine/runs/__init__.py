"""The door to runs: opening, stepping, viewing, time travel (and the base graph rewinds share),
commands, breakpoints, approval, pins, scenario files and the store's list of runs."""
