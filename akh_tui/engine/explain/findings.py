"""The persona's voice (seed 004: "the persona's grammar preference controls narrative
synthesis"; issue 13 §5): a goal's findings written in a grammar.

Findings are the goal's evidence triples: triples between symbols that the goal's own tool
calls returned (`Goal.seen`, which never holds a hypothesis's symbols for that reason), minus
hypotheses (synthesize_triple) and metadata, oldest first, at most `MAX_FACTS`.

Grammars: `narrative` (prose: a topic sentence per subject, connecting phrases), `formal`
(a heading per subject, bullets), `terse` (facts only, one a line), or a path to a grammar
TOML the user writes:

    [grammar]
    opening = "What we know about {goal}:"      # placeholders: goal, count, subjects
    closing = "That makes {count} facts."
    heading = "{subject}"                       # optional: one per subject group
    bullet = "- "                               # optional: prefix of each fact line
    connectives = ["Also,", "Moreover,"]        # optional: before a group's 2nd, 3rd... fact
    paragraphs = true                           # facts of a subject on one line (prose)
    [facts]                                     # per predicate; placeholders below
    default = "{subject} {predicate_words} {object_words}."
    "is-a" = "{subject} is {an_object}."

A fact's placeholders: `subject`, `predicate`, `object` (the labels), `predicate_words` and
`object_words` (hyphens as spaces: "lives in"), `an_object` ("an animal", "a mammal") and
`property` (a has-property object as a phrase: "gives milk", or 'has the property “icy”').

validated like every TOML the program reads (file, line and field of the first problem).
Deterministic: the same goal and graph give the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, parse_toml, read_user_file
from ..tomlpos import TomlLocator

if TYPE_CHECKING:
    from ..cycle.agent import Agent
    from ..knowledge.kg import Triple

MAX_FACTS = 50
SEEN_CAP = 200  # seen symbols whose triples are read
PER_SYMBOL = 64  # triples read per seen symbol
BUILTIN = ("narrative", "formal", "terse")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
OPENING_FIELDS = ("goal", "count", "subjects")
FACT_FIELDS = ("subject", "predicate", "object", "predicate_words", "object_words", "an_object", "property")
GRAMMAR_KEYS = ("name", "opening", "closing", "heading", "bullet", "connectives", "paragraphs")


@dataclass(frozen=True)
class Grammar:
    name: str
    opening: str
    closing: str
    facts: dict[str, str]
    default_fact: str = "{subject} {predicate} {object}."
    heading: str = ""
    bullet: str = ""
    connectives: tuple[str, ...] = ()
    paragraphs: bool = False
    capitalise: bool = True
    blank_between_groups: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


NARRATIVE = Grammar(
    "narrative",
    opening="Working on “{goal}”, the agent established {count} facts about {subjects}.",
    closing="Taken together, these findings bear on {goal}.",
    facts={"is-a": "{subject} is {an_object}.", "has": "{subject} has {object_words}.",
           "orbits": "{subject} orbits {object}.", "eats": "{subject} eats {object_words}.",
           "lives-in": "{subject} lives in {object_words}.", "part-of": "{subject} is part of {object_words}.",
           "has-property": "{subject} {property}."},
    default_fact="{subject} {predicate_words} {object_words}.",
    connectives=("Moreover,", "It also turns out that", "In addition,", "Furthermore,"),
    paragraphs=True,
)
FORMAL = Grammar(
    "formal",
    opening="# Findings: {goal}\n\n{count} facts about {subjects}.",
    closing="## Summary\n\n- {count} facts established.",
    facts={},
    default_fact="{subject} {predicate} {object}",
    heading="## {subject}",
    bullet="- ",
    capitalise=False,
)
TERSE = Grammar("terse", opening="", closing="", facts={}, default_fact="{subject} {predicate} {object}",
                capitalise=False, blank_between_groups=False)
GRAMMARS = {"narrative": NARRATIVE, "formal": FORMAL, "terse": TERSE}


def _fill(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _check_template(text: Any, allowed: tuple[str, ...], file: str, loc: TomlLocator, fld: str) -> str:
    if not isinstance(text, str):
        raise InputError(f"must be a string, got {type(text).__name__}", file=file, line=loc.line(fld), field=fld)
    for m in _PLACEHOLDER.finditer(text):
        if m.group(1) not in allowed:
            raise InputError(f"unknown placeholder {{{m.group(1)}}}: use {', '.join('{' + a + '}' for a in allowed)}",
                             file=file, line=loc.line(fld), field=fld)
    return text


def load_grammar(path: str | Path) -> Grammar:
    """A grammar TOML, validated: an InputError names the file, line and field of the first
    problem (unknown key, wrong type, unknown placeholder)."""
    file = str(path)
    text = read_user_file(path, "grammar file")
    data = parse_toml(text, file)
    loc = TomlLocator(text)
    for key in data:
        if key not in ("grammar", "facts"):
            raise InputError(f"unknown table or key '{key}' (known: grammar, facts)", file=file, line=loc.line(key),
                             field=key)
    g = data.get("grammar", {})
    facts = data.get("facts", {})
    for name, value in (("grammar", g), ("facts", facts)):
        if not isinstance(value, dict):
            raise InputError("must be a table", file=file, line=loc.line(name), field=name)
    for key in g:
        if key not in GRAMMAR_KEYS:
            raise InputError(f"unknown key '{key}' (known: {', '.join(GRAMMAR_KEYS)})", file=file,
                             line=loc.line(f"grammar.{key}"), field=f"grammar.{key}")
    opening = _check_template(g.get("opening", ""), OPENING_FIELDS, file, loc, "grammar.opening")
    closing = _check_template(g.get("closing", ""), OPENING_FIELDS, file, loc, "grammar.closing")
    heading = _check_template(g.get("heading", ""), ("subject",), file, loc, "grammar.heading")
    bullet = _check_template(g.get("bullet", ""), (), file, loc, "grammar.bullet")
    name = _check_template(g.get("name", Path(file).stem), (), file, loc, "grammar.name")
    conn = g.get("connectives", [])
    if not isinstance(conn, list) or not all(isinstance(c, str) for c in conn):
        raise InputError("must be a list of strings", file=file, line=loc.line("grammar.connectives"),
                         field="grammar.connectives")
    paragraphs = g.get("paragraphs", False)
    if not isinstance(paragraphs, bool):
        raise InputError("must be true or false", file=file, line=loc.line("grammar.paragraphs"),
                         field="grammar.paragraphs")
    templates: dict[str, str] = {}
    for pred, tmpl in facts.items():
        templates[pred] = _check_template(tmpl, FACT_FIELDS, file, loc, f"facts.{pred}")
    default = templates.pop("default", "{subject} {predicate} {object}.")
    return Grammar(name, opening, closing, templates, default, heading, bullet, tuple(conn), paragraphs,
                   capitalise=False)


def resolve_grammar(name: str, base: Path | None = None) -> Grammar:
    """A built-in grammar by name, or a grammar TOML by path (relative paths also tried
    against `base`, the psyche file's folder)."""
    if name in GRAMMARS:
        return GRAMMARS[name]
    p = Path(name).expanduser()
    if not p.is_absolute() and base is not None and (base / p).is_file():
        p = base / p
    if not p.is_file():
        raise InputError(f"unknown grammar {name!r}: use {', '.join(BUILTIN)} or a path to a grammar TOML file",
                         field="grammar")
    return load_grammar(p)


def findings(agent: "Agent", goal_id: int) -> list["Triple"]:
    """The goal's evidence triples (see the module's docstring), oldest first."""
    kg = agent.kg
    g = agent.goals[goal_id]
    seen = sorted(g.seen)[:SEEN_CAP]
    inside = set(seen)
    out: dict[tuple[int, int, int], "Triple"] = {}
    for s in seen:
        for t in kg.facts_out(s)[:PER_SYMBOL]:
            if t.object in inside and t.provenance != "tool:synthesize_triple":
                out.setdefault(t.key, t)
    return sorted(out.values(), key=lambda t: t.seq)[:MAX_FACTS]


# words spelled with a vowel but said with a consonant, and the reverse ("a unicorn", "an hour")
_SAID_WITH_A = ("uni", "use", "usu", "uti", "ura", "uro", "eu", "one", "once")
_SAID_WITH_AN = ("hour", "honest", "honour", "honor", "heir")


def _an(noun: str) -> str:
    """`noun` with its indefinite article: "an animal", "a mammal" (the narrative said "a animal")."""
    w = noun.lower()
    vowel = w[:1] in "aeiou" and not w.startswith(_SAID_WITH_A)
    return ("an " if vowel or w.startswith(_SAID_WITH_AN) else "a ") + noun


def _words(label: str) -> str:
    return label.replace("-", " ").replace("_", " ")


def _property(label: str) -> str:
    """A has-property object as a phrase: a verb phrase is said as is ("gives milk", "can fly"),
    anything else named ('has the property “icy”'): "dog has-property gives-milk" read as code."""
    words = _words(label).split()
    first = words[0].lower() if words else ""
    verb = first in ("can", "cannot", "does", "may", "must") or (
        len(words) > 1 and first.endswith("s") and not first.endswith("ss"))
    return " ".join(words) if verb else f"has the property “{' '.join(words)}”"


def _fact_values(s: str, p: str, o: str) -> dict[str, str]:
    return {"subject": s, "predicate": p, "object": o, "predicate_words": _words(p), "object_words": _words(o),
            "an_object": _an(_words(o)), "property": _property(o)}


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def render(grammar: Grammar, goal: str, facts: list[tuple[str, str, str]]) -> str:
    """The findings as text in `grammar`. `facts` are (subject, predicate, object) labels."""
    groups: dict[str, list[tuple[str, str, str]]] = {}
    for f in facts:
        groups.setdefault(f[0], []).append(f)
    subjects = list(groups)
    shown = ", ".join(subjects[:5]) + (f" and {len(subjects) - 5} more" if len(subjects) > 5 else "")
    head = {"goal": goal, "count": str(len(facts)), "subjects": shown or "nothing"}
    blocks: list[str] = []
    if not facts:
        return "" if grammar.name == "terse" else "No findings yet."
    if grammar.opening:
        blocks.append(_fill(grammar.opening, head))
    for subject, items in groups.items():
        lines: list[str] = []
        for i, (s, p, o) in enumerate(items):
            sentence = _fill(grammar.facts.get(p, grammar.default_fact), _fact_values(s, p, o))
            if i > 0 and grammar.connectives:
                conn = grammar.connectives[(i - 1) % len(grammar.connectives)]
                sentence = f"{conn} {sentence}"
            elif grammar.capitalise:
                sentence = _cap(sentence)
            lines.append(grammar.bullet + sentence)
        body = " ".join(lines) if grammar.paragraphs else "\n".join(lines)
        if grammar.heading:
            body = _fill(grammar.heading, {"subject": subject}) + ("\n\n" if grammar.blank_between_groups else "\n") + body
        blocks.append(body)
    if grammar.closing:
        blocks.append(_fill(grammar.closing, head))
    return ("\n\n" if grammar.blank_between_groups else "\n").join(blocks)


def synthesize(agent: "Agent", goal_id: int, grammar: str | None = None) -> dict[str, Any]:
    """{"goal": {id, description}, "grammar": name, "facts": [{subject, predicate, object,
    provenance, cycle}], "text"}; `grammar` None: the persona's grammar_preference."""
    kg = agent.kg
    g = agent.goals[goal_id]
    psyche = agent.pending_psyche or agent.psyche
    name = grammar if grammar is not None else psyche.persona.grammar_preference
    source = getattr(psyche, "source", None)
    base = Path(source).parent if source else None
    gram = resolve_grammar(name, base)
    ts = findings(agent, goal_id)
    first: dict[int, int] = {}
    for t in ts:  # facts in the order every grammar tells them: grouped by subject, oldest first
        first.setdefault(t.subject, len(first))
    ts = sorted(ts, key=lambda t: (first[t.subject], t.seq))
    labels = [(kg.label(t.subject), kg.label(t.predicate), kg.label(t.object)) for t in ts]
    return {
        "goal": {"id": g.id, "description": g.description},
        "grammar": gram.name,
        "facts": [{"subject": s, "predicate": p, "object": o, "provenance": t.provenance, "cycle": t.cycle}
                  for (s, p, o), t in zip(labels, ts)],
        "text": render(gram, g.description, labels),
    }
