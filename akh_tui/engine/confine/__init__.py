"""Confinement of the dangerous tools (SPEC §5): the policy checks, and the sandbox that contains
shell_exec's programs."""
