"""Goals and their success criteria (SPEC §7, §8), and what Orient found for one goal (the inputs
of scoring and of every tool)."""
