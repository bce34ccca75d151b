"""`akh-tui bench`: figures as ratios to their baselines, measured in one process."""
