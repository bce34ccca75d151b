"""The agent's OODA cycle (SPEC §4): the agent and its phases, scoring (SPEC §6), plans with
backtracking (SPEC §7), who decides, and the agent's snapshot. It sits above tools/ (the agent
runs them), which sit above goals/ and knowledge/ (what tools read)."""
