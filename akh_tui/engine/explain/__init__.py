"""Explanations read from the record: why this tool and why not that one, why a goal is not done,
what Orient saw, and findings in the persona's voice."""
