"""What the agent knows and remembers: the knowledge graph (SPEC §2), the symbol vectors (SPEC §3),
rule files with forward chaining (SPEC §5), working and episodic memory (SPEC §10)."""
