"""The eleven tools' declarations (SPEC §5): name, archetype, capabilities, danger, input,
VSA profile. Kept apart from tools.py (which needs networkx and the graph) so that listing
the tools, the CLI's parsers and the trace readers import nothing heavy."""

from __future__ import annotations

from dataclasses import dataclass

DANGER_LEVELS = ("safe", "cautious", "dangerous", "critical")  # ordered


def danger_index(level: str) -> int:
    """A danger level's rank (safe 0 .. critical 3); ValueError naming the levels otherwise."""
    try:
        return DANGER_LEVELS.index(level)
    except ValueError:
        raise ValueError(f"unknown danger level {level!r}; expected one of {DANGER_LEVELS}") from None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    archetype: str
    capabilities: tuple[str, ...]
    danger: str
    input_schema: str
    profile: tuple[str, ...]  # keywords bundled into the tool's VSA profile (odd count: unbiased bundle)
    does: str


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("kg_query", "sage", ("read_kg",), "safe", "symbol label",
             ("query", "find", "search", "list", "knowledge", "facts", "lookup"),
             "triples from/to a symbol"),
    ToolSpec("infer_rules", "sage", ("read_kg", "write_kg"), "safe", "none (the agenda of new triples)",
             ("infer", "deduce", "derive", "rules", "classify", "conclude", "logic"),
             "forward-chains the rule file over new triples"),
    ToolSpec("reason", "sage", ("read_kg",), "safe", "goal symbols",
             ("reason", "explain", "why", "path", "connect", "how", "relation"),
             "shortest labelled paths between goal symbols, derivation chains"),
    ToolSpec("synthesize_triple", "sage", ("write_kg",), "cautious", "subject, related-to, object",
             ("synthesize", "create", "link", "connect", "hypothesis", "add", "relate"),
             "adds a related-to hypothesis (confidence 0.7)"),
    ToolSpec("gap_analysis", "healer", ("read_kg",), "safe", "goal symbols",
             ("gap", "missing", "lack", "incomplete", "analyze", "properties", "compare"),
             "dead ends and properties siblings have that the symbol lacks"),
    ToolSpec("user_interact", "healer", ("ask_user",), "safe", "question text",
             ("ask", "user", "question", "clarify", "answer", "human", "tell"),
             "asks the user; 's p o' answers become triples"),
    ToolSpec("file_io", "explorer", ("read_fs", "write_fs"), "dangerous", "workspace path",
             ("file", "read", "write", "path", "save", "load", "document"),
             "reads or writes a file inside the workspace"),
    ToolSpec("http_fetch", "explorer", ("network",), "dangerous", "URL",
             ("http", "fetch", "download", "url", "web", "page", "online"),
             "GET a URL on the allow-list"),
    ToolSpec("shell_exec", "explorer", ("process_exec",), "critical", "argv",
             ("shell", "command", "run", "execute", "program", "process", "terminal"),
             "runs an allow-listed program, no shell"),
    ToolSpec("memory_recall", "guardian", ("read_memory",), "safe", "goal symbols",
             ("remember", "recall", "memory", "episode", "past", "history", "before"),
             "episodic recall into working memory"),
    ToolSpec("similarity_search", "guardian", ("read_kg",), "safe", "goal symbols",
             ("similar", "like", "related", "resemble", "cluster", "compare", "neighbours"),
             "VSA nearest neighbours of the goal's symbols"),
)
TOOL_NAMES = tuple(s.name for s in SPECS)
SPEC_BY_NAME = {s.name: s for s in SPECS}
TOOL_ARCHETYPES = {s.name: s.archetype for s in SPECS}
