"""The headless OODA engine. Never imports textual (a test checks it).

Front ends reach a run through `akh_tui.engine.runs.run` (the door) and read `akh_tui.engine.records`;
importing this package loads nothing else, so a command that needs no engine starts fast."""
