"""The session store (SQLite) with its one-writer lock, and the JSON Lines trace (SPEC §11)."""
