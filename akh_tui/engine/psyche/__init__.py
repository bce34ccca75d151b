"""The Jungian psyche (SPEC §9): persona, shadow, archetypes; the shadow's pattern matcher."""
