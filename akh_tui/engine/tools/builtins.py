"""The eleven built-in tools (SPEC §5), written as plugins of the tool interface (toolapi.py):
each is a `FunctionTool` of its declaration (toolspecs.py, re-exported here), its offer (when
offered, base score, input found in the goal), its run, its plan role and the words for its base.

A tool never raises out of `run` on purpose: confinement refusals raise `Refused`, any other
exception is caught by the agent and becomes a failed result (SPEC §4).
"""

from __future__ import annotations

import functools
import re
from typing import Callable

from ..confine import policy as confine
from ..confine.files import read_file, write_file
from ..confine.http import http_get
from ..confine.process import run_program, split_command
from ..goals.context import GoalContext
from ..errors import InputError
from ..knowledge.kg import Triple, parse_triple_lines
from ..text import normalised_words
from .api import FunctionTool, Offer, PlanRole, ToolContext, ToolResult  # noqa: F401 (re-exported)
from .specs import SPEC_BY_NAME, SPECS, TOOL_ARCHETYPES, TOOL_NAMES, ToolSpec  # noqa: F401 (re-exported)
from ..redaction import redact
from ..urls import check_url

CREATION_WORDS = ("write", "store", "save", "create")
SIMILARITY_CANDIDATES = 64  # symbols similarity_search compares, most activated first
GAP_PARENTS, GAP_SIBLINGS, GAP_FACTS = 3, 20, 16  # bounds of gap_analysis's sibling comparison


def clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x



_URL = re.compile(r"https?://[^\s'\"<>`]+")
_BACKQUOTED = re.compile(r"`([^`]+)`")


def _labels(tc: ToolContext, ids) -> str:
    label = tc.kg.label  # (tc.kg is a property: read once, not once a symbol)
    return ", ".join([label(s) for s in ids])


# ---- offers (SPEC §6 base table and §5 inputs) ----------------------------------------------

def offer_kg_query(tc: ToolContext, ctx: GoalContext) -> Offer:
    base = 0.8 if ctx.adjacent < 3 else 0.4
    queried = set(ctx.goal.queried)
    ranked = ctx.ranked()
    target = next((s for s in ranked if s not in queried), None)
    if target is None and ctx.symbols:
        target = ctx.symbols[0]
    if target is None:
        # no goal symbol: fall back to the first symbol sharing a word with the goal text
        for w in normalised_words(ctx.goal.description + " " + ctx.goal.criteria):
            hits = tc.kg.by_token(w)
            if hits:
                target = hits[0]
                break
    if target is None:
        return Offer(True, base, "", arg=None)
    return Offer(True, base, tc.kg.label(target), arg=target)


def offer_infer_rules(tc: ToolContext, ctx: GoalContext) -> Offer:
    if not ctx.K:
        return Offer(False, why_not="no known triples about the goal")
    bonus = 0.1 if ctx.goal.tool_uses.get("infer_rules", 0) == 0 else 0.0
    return Offer(True, clamp(0.7 * tc.similarity(ctx.goal, "infer_rules") + bonus, 0.35, 0.75),
                 f"{tc.rules.pending()} new triples")


def offer_reason(tc: ToolContext, ctx: GoalContext) -> Offer:
    if not ctx.K:
        return Offer(False, why_not="no known triples about the goal")
    return Offer(True, 0.5, _labels(tc, ctx.symbols), arg=list(ctx.symbols))


def offer_synthesize(tc: ToolContext, ctx: GoalContext) -> Offer:
    if not ctx.K:
        return Offer(False, why_not="no known triples about the goal")
    if not ctx.I:
        return Offer(False, why_not="spreading activation found nothing")
    kg = tc.kg
    subj = ctx.symbols[0]
    near = kg.neighbours(subj)  # kg.is_neighbour(subj, ·), the set looked up once
    for sid in ctx.order:
        if sid != subj and sid not in near:
            return Offer(True, 0.7, f"{kg.label(subj)} related-to {kg.label(sid)}", arg=(subj, sid))
    return Offer(False, why_not="every activated symbol is already adjacent to the goal")


def offer_gap(tc: ToolContext, ctx: GoalContext) -> Offer:
    bonus = 0.1 if ctx.goal.tool_uses.get("kg_query", 0) >= 2 else 0.0
    base = clamp(0.7 * tc.similarity(ctx.goal, "gap_analysis") + bonus, 0.3, 0.75)
    return Offer(True, base, _labels(tc, ctx.symbols), arg=list(ctx.symbols))


def _external(tc: ToolContext, ctx: GoalContext, name: str, find: Callable[[str], object], what: str) -> Offer:
    sim = tc.similarity(ctx.goal, name)
    if sim <= 0.55:
        return Offer(False, why_not=f"goal not similar to the tool (sim {sim:.3f} ≤ 0.55)")
    arg = find(ctx.goal.description)
    if arg is None:
        return Offer(False, why_not=f"no input: no {what} in the goal text")
    text = " ".join(arg) if isinstance(arg, list) else str(arg)
    return Offer(True, 0.75 * sim, text, arg=arg)


def offer_user(tc: ToolContext, ctx: GoalContext) -> Offer:
    return _external(tc, ctx, "user_interact", lambda text: text, "question")


# ---- inputs found in the goal text -----------------------------------------------------------
#
# These run on every cycle a tool is considered, over text a user typed, so they are linear in
# the text and remembered per text (a goal's description does not change between cycles).
# The path rule was the regex
#     (?<![\w/.:])((?:[\w.-]+/)*[\w-]+\.[A-Za-z]\w{0,5}|(?:[\w.-]+/)+[\w.-]+)(?![\w/])
# whose backtracking cost grew with the square of a run like "-.-.-." (40 KB: 2.5 s a cycle).
# `_scan_path` finds the very match that regex finds (tests compare the two on random text),
# walking each run of path characters once.

_RUN = re.compile(r"[\w./-]+")  # the characters a path match is made of: no backtracking
MAX_COMMAND = 1000  # characters of one `backquoted` command worth splitting (shlex is ~20 µs a character)


@functools.lru_cache(maxsize=256)
def find_path(text: str) -> str | None:
    text = text.replace("`", " ")
    for m in _RUN.finditer(text):
        s = m.start()
        found = _scan_path(m.group(0), s == 0 or text[s - 1] != ":")
        if found is not None:
            return found
    return None


def _scan_path(r: str, first_ok: bool) -> str | None:
    r"""The leftmost-start match of the path regex above within one run r of [\w./-] chars.

    A match starts at r[0] (unless a ':' precedes the run) or just after a '-', never at a
    '/'. At a start, alternative A (dir/…/name.ext) is tried with the most directories
    first, then none, then alternative B (dir/…/rest) with the most directories first.
    Directory segments are fixed by the slashes, so per slash there is one answer for A (the
    component after it is name.ext) and one for B (the longest tail after it that may end
    the match); a start succeeds through a slash iff some slash it can reach succeeds."""
    n = len(r)

    def ext_end(d: int) -> int | None:
        """End of `.ext` at the '.' r[d]: a letter and up to 5 word chars, not then '/'."""
        x = d + 1
        if x >= n or not ("a" <= r[x] <= "z" or "A" <= r[x] <= "Z"):
            return None
        while x < n and r[x] not in "./-":
            x += 1
            if x - d > 7:  # longer than the regex's \w{0,5} can leave followed by a non-word
                return None
        return x if x == n or r[x] != "/" else None

    # next '.' or '/' at or after each position (a name part [\w-]+ stops at either)
    stop = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        stop[i] = i if r[i] in "./" else stop[i + 1]

    def comp(c: int) -> int | None:  # A's last component name.ext starting at c
        d = stop[c]
        if d == c or d == n or r[d] != ".":
            return None
        return ext_end(d)

    slashes = [i for i, ch in enumerate(r) if ch == "/"]
    k = len(slashes)
    # tail end for B after slash j: up to the next slash or the end; ending before a slash
    # needs a '.' or '-' to stop at
    a_end: list[int | None] = [None] * k
    b_end: list[int | None] = [None] * k
    last_cut = -1  # last '.' or '-' seen, scanning left to right
    cuts_before: list[int] = [-1] * (n + 1)
    for i, ch in enumerate(r):
        cuts_before[i] = last_cut
        if ch in ".-":
            last_cut = i
    cuts_before[n] = last_cut
    for j, p in enumerate(slashes):
        c = p + 1
        a_end[j] = comp(c) if c < n else None
        q = slashes[j + 1] if j + 1 < k else n
        if q == n:
            b_end[j] = n if c < n else None
        else:
            m = cuts_before[q]
            b_end[j] = m if m > c else None
    # segments are non-empty: slash j+1 is reachable from slash j unless they are adjacent
    best_a: list[int | None] = [None] * k  # the farthest reachable slash where A succeeds
    best_b: list[int | None] = [None] * k
    for j in range(k - 1, -1, -1):
        linked = j + 1 < k and slashes[j + 1] > slashes[j] + 1
        best_a[j] = best_a[j + 1] if linked and best_a[j + 1] is not None else (j if a_end[j] is not None else None)
        best_b[j] = best_b[j + 1] if linked and best_b[j + 1] is not None else (j if b_end[j] is not None else None)
    nxt = 0  # index of the first slash after the current start
    for i in range(n):
        if not (first_ok if i == 0 else r[i - 1] == "-") or r[i] == "/":
            continue
        while nxt < k and slashes[nxt] < i:
            nxt += 1
        ba = best_a[nxt] if nxt < k else None
        if ba is not None:
            return r[i:a_end[ba]]
        end = comp(i)
        if end is not None:
            return r[i:end]
        bb = best_b[nxt] if nxt < k else None
        if bb is not None:
            return r[i:b_end[bb]]
    return None


@functools.lru_cache(maxsize=256)
def find_url(text: str) -> str | None:
    m = _URL.search(text)
    return m.group(0).rstrip(".,;)") if m else None


def check_goal_url(text: str, field: str, file: str | None = None, line: int | None = None) -> None:
    """The URL a goal names (http_fetch's input), checked when the goal is given: a malformed
    one (`http://[::1/`, a port of 99999) is an InputError naming the field, not a failed fetch
    later. Whether the host may be reached is confinement's question, at act."""
    url = find_url(text)
    if url is not None:
        check_url(url, field, file=file, line=line)


def find_program(allow: list[str]) -> Callable[[str], list[str] | None]:
    return functools.partial(_find_program, tuple(allow))


@functools.lru_cache(maxsize=256)
def _find_program(allow: tuple[str, ...], text: str) -> list[str] | None:
    found = _program(allow, text)
    return None if found is None else list(found)  # a copy: callers may keep or change it


def _program(allow: tuple[str, ...], text: str) -> tuple[str, ...] | None:
    for cmd in _BACKQUOTED.findall(text):
        if len(cmd) > MAX_COMMAND:
            continue  # no allow-listed command line is this long; shlex on 1 MB took 20 s
        try:
            argv = split_command(cmd)
        except confine.Refused:
            continue
        if argv and argv[0] in allow:
            return tuple(argv)
    for word in text.replace("`", " ").split():
        w = word.strip(".,;:!?'\"()")
        if w in allow:
            return (w,)
    return None


def offer_file(tc: ToolContext, ctx: GoalContext) -> Offer:
    return _external(tc, ctx, "file_io", find_path, "file path")


def offer_http(tc: ToolContext, ctx: GoalContext) -> Offer:
    return _external(tc, ctx, "http_fetch", find_url, "URL")


def offer_shell(tc: ToolContext, ctx: GoalContext) -> Offer:
    return _external(tc, ctx, "shell_exec", find_program(tc.config.shell_allow), "allow-listed program")


def offer_recall(tc: ToolContext, ctx: GoalContext) -> Offer:
    if not ctx.E:
        return Offer(False, why_not="no episode recalled for the goal")
    return Offer(True, 0.55, _labels(tc, ctx.symbols), arg=list(ctx.symbols))


def offer_similarity(tc: ToolContext, ctx: GoalContext) -> Offer:
    if not ctx.I:
        return Offer(False, why_not="spreading activation found nothing")
    return Offer(True, 0.55, _labels(tc, ctx.symbols) or _labels(tc, [ctx.top[0][0]]), arg=list(ctx.symbols))


# ---- runs ----------------------------------------------------------------------------------

def run_kg_query(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    if arg is None:
        return ToolResult("nothing to query: no symbol matches the goal's words")
    kg = tc.kg
    if arg not in ctx.goal.queried:
        ctx.goal.queried.append(arg)
    triples = kg.adjacent(arg, limit=tc.config.query_limit)
    if not triples:
        return ToolResult(f"no triples about {kg.label(arg)}")
    lines = [kg.text(t) for t in triples]
    return ToolResult(f"{len(triples)} triples about {kg.label(arg)}: " + "; ".join(lines), triples)


def run_infer_rules(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    new = tc.rules.run(tc.cycle)
    if not new:
        return ToolResult("nothing new to derive")
    kg = tc.kg
    shown = "; ".join(f"{kg.text(t)} [{t.provenance}]" for t in new[:20])
    more = f" (+{len(new) - 20} more)" if len(new) > 20 else ""
    return ToolResult(f"derived {len(new)} triples: {shown}{more}", new)


def _ball(tc: ToolContext, start: int, hops: int, budget: int) -> list[Triple]:
    """Non-metadata triples within `hops` of start (undirected), reading at most `budget` edges."""
    kg = tc.kg
    seen = {start}
    frontier = [start]
    out: list[Triple] = []
    reads = 0
    for _ in range(hops):
        nxt = []
        for node in frontier:
            for t in kg.adjacent(node, limit=tc.config.activation_fanout):
                reads += 1
                if reads > budget:
                    return out
                out.append(t)
                other = t.object if t.subject == node else t.subject
                if other not in seen:
                    seen.add(other)
                    nxt.append(other)
        frontier = nxt
    return out


def run_reason(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    kg = tc.kg
    symbols: list[int] = arg or []
    lines: list[str] = []
    returned: dict[tuple, Triple] = {}
    if len(symbols) >= 2:
        # networkx is the right tool for shortest paths, on this small subgraph only; imported
        # here because importing it costs more than a second of start-up to every command
        import networkx as nx

        # Any path of ≤ 4 hops lies inside the union of the 2-hop balls of its ends.
        sub = nx.Graph()
        for s in symbols:
            for t in _ball(tc, s, 2, budget=2000):
                if not sub.has_edge(t.subject, t.object):
                    sub.add_edge(t.subject, t.object, t=t)
        for i, a in enumerate(symbols):
            for b in symbols[i + 1:]:
                if a in sub and b in sub:
                    try:
                        path = nx.shortest_path(sub, a, b)
                    except nx.NetworkXNoPath:
                        path = None
                else:
                    path = None
                if path is None or len(path) > 5:
                    lines.append(f"no path of ≤ 4 hops between {kg.label(a)} and {kg.label(b)}")
                    continue
                parts = [kg.label(path[0])]
                for u, v in zip(path, path[1:]):
                    t = sub.edges[u, v]["t"]
                    returned[t.key] = t
                    arrow = f"-{kg.label(t.predicate)}->" if t.subject == u else f"<-{kg.label(t.predicate)}-"
                    parts += [arrow, kg.label(v)]
                lines.append("path: " + " ".join(parts))
    # derivation chains of inferred triples touching the goal's symbols
    for s in symbols:
        for t in kg.adjacent(s, limit=tc.config.query_limit):
            if t.provenance.startswith("inferred:") and t.key not in returned:
                returned[t.key] = t
                chain = _derivation(tc, t.key, depth=0)
                lines.append(f"derived: {kg.text(t)} because {chain}")
    if not lines:
        return ToolResult("one goal symbol and no inferred triples: nothing to explain")
    return ToolResult("\n".join(lines), list(returned.values()))


def _derivation(tc: ToolContext, key: tuple, depth: int) -> str:
    kg = tc.kg
    d = kg.derivations.get(key)
    if d is None or depth >= 4:
        t = kg.get(*key)
        return f"({kg.text(t)})" if t else "?"
    rule, premises = d
    inner = " and ".join(_derivation(tc, p, depth + 1) for p in premises)
    return f"[{rule}: {inner}]"


def run_synthesize(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    subj, obj = arg
    kg = tc.kg
    t = kg.add(subj, "related-to", obj, 0.7, "tool:synthesize_triple", tc.cycle)
    if t is None:
        return ToolResult(f"already known: {kg.label(subj)} related-to {kg.label(obj)}")
    return ToolResult(f"hypothesis added: {kg.text(t)} (confidence 0.7)", [t])


def run_gap(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    kg = tc.kg
    isa = kg.lookup("is-a")
    lines: list[str] = []
    shown: list[Triple] = []
    for s in arg or []:
        have = {(t.predicate, t.object) for t in kg.facts_out(s)[: tc.config.activation_fanout]}
        if not have:
            lines.append(f"dead end: {kg.label(s)} has no outgoing facts")
        if isa is None:
            continue
        for parent in kg.objects(s, isa)[:GAP_PARENTS]:
            missing: dict[tuple[int, int], int] = {}
            for sib in kg.subjects(isa, parent)[:GAP_SIBLINGS]:
                if sib == s:
                    continue
                for t in kg.facts_out(sib)[:GAP_FACTS]:
                    if t.predicate != isa and (t.predicate, t.object) not in have:
                        if (t.predicate, t.object) not in missing:
                            missing[(t.predicate, t.object)] = sib
                            shown.append(t)
            for (p, o), sib in list(missing.items())[:10]:
                lines.append(f"gap: {kg.label(s)} lacks ({kg.label(p)} {kg.label(o)}) that sibling {kg.label(sib)} has")
    for sid, _ in ctx.top:
        if not kg.facts_out(sid):
            lines.append(f"dead end: {kg.label(sid)} has no outgoing facts")
    if not lines:
        return ToolResult("no gaps found")
    return ToolResult("\n".join(lines), shown)


def run_user(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    answer = tc.answers(ctx.goal)
    if not answer:
        return ToolResult(f"asked: {arg!r}; no answer")
    triples = []
    for n, line in enumerate(answer, start=1):
        parts = line.split()
        if len(parts) == 3:
            t = tc.kg.add(parts[0], parts[1], parts[2], 1.0, "user", tc.cycle)
            if t is not None:
                triples.append(t)
    return ToolResult(f"asked: {arg!r}; answer: " + "; ".join(answer), triples, evidence=" ".join(answer))


def run_file(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    conf = tc.confinement()
    rel = str(arg)
    if any(w in ctx.goal.description.lower().split() for w in CREATION_WORDS):
        kg = tc.kg
        lines = [kg.text(t).replace(" ", "\t", 2) for s in ctx.symbols for t in kg.adjacent(s, limit=tc.config.query_limit)]
        size = write_file(conf, rel, "\n".join(lines) + "\n")
        return ToolResult(f"wrote {len(lines)} triples ({size} bytes) to {rel}")
    text = redact(read_file(conf, rel))  # a workspace file may hold a key (.env): masked before anything keeps it
    if rel.endswith(".tsv"):
        try:
            parsed = parse_triple_lines(text.split("\n"), rel)  # as read_triple_file: labels may hold \x0c or U+2028
        except InputError as exc:
            raise confine.Refused(f"malformed triple file: {exc}") from None
        triples = [t for pt in parsed if (t := tc.kg.add(pt.subject, pt.predicate, pt.object, pt.confidence, "tool:file_io", tc.cycle))]
        return ToolResult(f"ingested {len(triples)} new triples from {rel}", triples)
    return ToolResult(f"read {rel}: {text}", evidence=text)


def run_http(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    status, body = http_get(tc.confinement(), str(arg))
    body = redact(body)  # a page may echo credentials: masked before anything keeps it
    return ToolResult(f"GET {arg} -> {status}: {body}", evidence=body)


def run_shell(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    code, out = run_program(tc.confinement(), list(arg))
    out = redact(out)  # `env`, `cat .netrc`: masked before anything keeps it
    if code != 0:
        raise confine.Refused(f"{arg[0]} exited with status {code}: {out[:200]}")
    return ToolResult(f"$ {' '.join(arg)}\n{out}", evidence=out)


def run_recall(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    eps = tc.episodic.recall(arg or [], top_k=5)
    if not eps:
        return ToolResult("no episode recalled")
    for ep in eps:
        tc.wm.push(f"Recalled episode {ep.id}: {ep.summary}", "inference", tc.cycle, ep.learnings[:20], ctx.goal.id)
    lines = [f"episode {ep.id} (cycle {ep.cycle}): {ep.summary}; learned {_labels(tc, ep.learnings[:10])}" for ep in eps]
    syms = list(dict.fromkeys(s for ep in eps for s in ep.learnings))[:50]
    # evidence is what the episodes learned (their symbols), not their summaries, which quote
    # working-memory text and so the goal's own description
    label = tc.kg.label
    return ToolResult("\n".join(lines), symbols=syms, evidence=" ".join([label(s) for s in syms]))


def run_similarity(tc: ToolContext, ctx: GoalContext, arg) -> ToolResult:
    kg, sv = tc.kg, tc.symbol_vectors
    seeds = list(arg) or [ctx.top[0][0]]
    # candidates: the most activated symbols within 2 hops (orient's activation), never a scan
    # of the graph; capped so a hub's neighbourhood costs no more than a small one's
    cands = ctx.order[:SIMILARITY_CANDIDATES]
    others = [s for s in cands if s not in seeds]
    sims = sv.similarities(seeds, others)  # one numpy pass, not 64 (and kept while the graph stands still)
    scored = sorted(zip(sims, others), key=lambda x: (-x[0], x[1]))
    top = scored[:5]
    if not top:
        return ToolResult("no neighbours to compare")
    text = ", ".join(f"{kg.label(s)} {sim:.3f}" for sim, s in top)
    return ToolResult(f"similar to {_labels(tc, seeds)}: {text}", symbols=[s for _, s in top],
                      evidence=" ".join(kg.label(s) for _, s in top))


Tool = FunctionTool  # the built-ins' kind of tool, by its old name: Tool(spec, offer, run)


def _base_kg_query(base: float) -> str:
    return "few known triples around the goal" if base >= 0.8 - 1e-12 else "the goal already has ≥ 3 known triples"


_SIMILAR = "from how similar the goal is to the tool"
_EXTERNAL = "0.75 × goal/tool similarity"


def _said(text: str) -> Callable[[float], str]:
    return lambda base: text


def _external_role(words: tuple[str, ...], rationale: str) -> PlanRole:
    return PlanRole("external", words, rationale=rationale)


# In SPEC §5's order. The graph tools' plan roles are the strategies themselves (plan.py builds
# explore-first and reason-first from them); the external tools join a plan by their role.
BUILTINS: tuple[FunctionTool, ...] = (
    FunctionTool(SPEC_BY_NAME["kg_query"], offer_kg_query, run_kg_query, explain=_base_kg_query),
    FunctionTool(SPEC_BY_NAME["infer_rules"], offer_infer_rules, run_infer_rules, explain=_said(_SIMILAR)),
    FunctionTool(SPEC_BY_NAME["reason"], offer_reason, run_reason, explain=_said("fixed base when triples are known")),
    FunctionTool(SPEC_BY_NAME["synthesize_triple"], offer_synthesize, run_synthesize,
                 explain=_said("fixed base when triples and activated symbols are known")),
    FunctionTool(SPEC_BY_NAME["gap_analysis"], offer_gap, run_gap, explain=_said(_SIMILAR)),
    FunctionTool(SPEC_BY_NAME["user_interact"], offer_user, run_user, explain=_said(_EXTERNAL)),
    FunctionTool(SPEC_BY_NAME["file_io"], offer_file, run_file,
                 _external_role(("file",), "read or write the file the goal names"), explain=_said(_EXTERNAL)),
    FunctionTool(SPEC_BY_NAME["http_fetch"], offer_http, run_http,
                 _external_role(("http", "fetch", "download"), "fetch the URL the goal names"), explain=_said(_EXTERNAL)),
    FunctionTool(SPEC_BY_NAME["shell_exec"], offer_shell, run_shell,
                 _external_role(("command", "shell"), "run the program the goal names"), explain=_said(_EXTERNAL)),
    FunctionTool(SPEC_BY_NAME["memory_recall"], offer_recall, run_recall,
                 explain=_said("fixed base when episodes were recalled")),
    FunctionTool(SPEC_BY_NAME["similarity_search"], offer_similarity, run_similarity,
                 explain=_said("fixed base when activation found symbols")),
)
# The built-in table by name. A run's tools come from its registry (registry.py), which starts
# from this table when the agent is made (tests swap an entry to make a tool raise).
TOOLS: dict[str, FunctionTool] = {t.spec.name: t for t in BUILTINS}
assert tuple(TOOLS) == TOOL_NAMES
