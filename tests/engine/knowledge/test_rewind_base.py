"""Rewinds restore the scenario's base graph by undoing what a run added (kg.truncate),
not by loading it again: the undone graph is the base graph exactly (every index, in the same
form), a rewound agent goes on exactly as the original run did, and nothing one rewound
state added (a fork's edits, a later cycle's triples) is seen by the next rewind."""

from akh_tui.engine.knowledge.kg import KnowledgeGraph


def fingerprint(kg: KnowledgeGraph) -> dict:
    """Every index of the graph as plain data (the caches and listeners aside): two graphs
    with equal fingerprints answer every query alike, in the same order."""
    skip = {"listeners", "_nbrs", "symbol_version", "_own_out", "_own_in", "_own_sp"}  # caches, bookkeeping
    out = {k: v for k, v in vars(kg).items() if k not in skip}
    out["symbols"] = [(s.id, s.label, s.kind, s.meta, s.key) for s in kg.symbols]
    out["log"] = [tuple(t) for t in kg.log]  # seq included (Triple equality leaves it out)
    out["_sp"] = {k: (tuple(v), "T") if v.__class__.__name__ == "Triple" else (type(v).__name__, repr(v))
                  for k, v in kg._sp.items()}
    return out


def base_graph() -> KnowledgeGraph:
    kg = KnowledgeGraph()
    for i in range(12):
        kg.add("whale", "is-a", f"class-{i}")  # a (s, p) key that becomes a dict
    kg.add("orca", "is-a", "class-1")
    kg.add("orca", "lives-in", "ocean")
    kg.add("goal:1", "agent:description", "desc:find whales")  # metadata
    kg.add("blue whale", "eats", "krill")
    return kg


def test_truncate_undoes_every_addition_to_the_same_indexes():
    kg = base_graph()
    before = fingerprint(kg)
    n_sym, n_tri = len(kg.symbols), len(kg.log)
    kg.neighbours(kg.lookup("whale"))  # a neighbour set that the additions touch
    # additions of every kind: new symbols and tokens, a short list becoming longer, a list
    # becoming a dict, a dict growing, metadata triples, a derivation, (p, o) lists
    t = kg.add("orca", "is-a", "mammal", 0.9, "inferred:transitive", 3)
    kg.derivations[t.key] = ("transitive", ((1, 2, 3),))
    for i in range(12, 20):
        kg.add("whale", "is-a", f"class-{i}", cycle=4)
    for i in range(6):
        kg.add("krill", "is-a", f"class-{i}", cycle=5)  # 'krill is-a' list grows past one
    kg.add("goal:2", "agent:description", "desc:whale krill", cycle=5)
    kg.add("blue whale", "lives-in", "ocean", cycle=6)  # (lives-in, ocean) gets a second subject
    kg.symbol("humpback whale")  # shares the token 'whale'
    assert fingerprint(kg) != before
    removed = kg.truncate(n_sym, n_tri)
    assert [x.key for x in removed][:1] == [t.key] and len(removed) == 1 + 8 + 6 + 1 + 1
    assert fingerprint(kg) == before
    assert fingerprint(kg) == fingerprint(base_graph())  # the same as a graph built afresh
    whale = kg.lookup("whale")
    assert kg.neighbours(whale) == {kg.lookup(f"class-{i}") for i in range(12)}
    assert kg.by_token("whale") == [whale, kg.lookup("blue whale")]
    assert kg.derivations == {}


def test_truncate_refuses_sizes_that_are_not_a_point_of_its_history():
    kg = base_graph()
    n_sym = len(kg.symbols)
    kg.add("narwhal", "is-a", "whale")
    try:
        kg.truncate(n_sym, len(kg.log))  # the symbols go, their triple would stay
    except ValueError as exc:
        assert "still has triples" in str(exc)
    else:
        raise AssertionError("truncate kept a triple of a removed symbol")


# ---- rewinds over the lent graph -------------------------------------------------------------
import json
import random

from akh_tui.bench.main import generated_tsv
from akh_tui.engine.runs import history
from akh_tui.engine.paths import Locations
from akh_tui.engine import Run
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from akh_tui.engine.store.session import SessionStore
from akh_tui.engine.cycle.state import snapshot


def big_run(tmp_path, cycles: int = 90) -> Run:
    """A scenario on disk with a generated 3,000-triple file, run through the door with a
    snapshot every 7 cycles, goals added at cycles 20 and 45; then a fork at 40 with edits (a
    goal of its own: other symbols and triples where main has its cycle-45 goal's), run 25
    cycles; main is shown again."""
    generated_tsv(tmp_path / "big.tsv", 3000)
    (tmp_path / "big.rules.toml").write_text('transitive = ["is-a"]\ninherit = ["has-property"]\n')
    (tmp_path / "big.toml").write_text(
        'name = "big"\nseed = 3\nkg = ["big.tsv"]\nrules = ["big.rules.toml"]\n[config]\nstall_threshold = 1000000\n'
        '[[goals]]\ndescription = "Find whale properties"\ncriteria = "whale plankton"\n'
        '[[goals]]\ndescription = "Classify entity-3"\ncriteria = "entity-3 plankton"\n')
    ctl = Run.start(Locations(tmp_path / "data", tmp_path / "config.toml"), str(tmp_path / "big.toml"),
                    store=SessionStore(":memory:", every=7))
    for _ in range(cycles):
        if ctl.cycle in (20, 45):
            ctl.add_goal(f"Find entity-{ctl.cycle} habitats", f"entity-{ctl.cycle} plankton", 200)
        ctl.step()
    ctl.fork(40, "edited", {"archetypes": {"explorer": 0.95}, "goals": ["Find entity-9 habitats"]})
    ctl.run_cycles(25)
    ctl.switch("main")
    return ctl


def dumps(records) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in records]


def test_rewinds_over_the_lent_graph_are_fresh_rewinds_and_go_on_like_the_run(tmp_path):
    ctl = big_run(tmp_path)
    store = ctl.store
    sc = load_scenario(str(tmp_path / "big.toml"))
    branches = {b["name"]: b["id"] for b in ctl.branches()}
    graphs = ctl._base_graph()
    built = []
    build = graphs._build
    graphs._build = lambda: built.append(1) or build()
    # back and forth in time, across the two branches: each rewind gets the graph the one
    # before it gave back (with cycles stepped on it after the rewind, and the other branch's
    # additions and edits)
    order = [("main", c) for c in range(1, 90, 4)] + [("edited", c) for c in range(41, 66, 6)]
    random.Random(5).shuffle(order)
    for name, c in order:
        b = branches[name]
        agent = history.rewind(store, b, c, ctl._rebuild, graphs)
        fresh = history.rewind(store, b, c, lambda: build_agent(sc, add_goals=False))
        assert fingerprint(agent.kg) == fingerprint(fresh.kg), (name, c)
        assert json.dumps(snapshot(agent), sort_keys=True) == json.dumps(snapshot(fresh), sort_keys=True)
        last = store.last_cycle(b)
        ahead = min(3, last - c)
        inputs = store.inputs(b, c, c + ahead)
        went_on = []
        for k in range(ahead):  # the rewound agent goes on as the run did (inputs included)
            history.replay(agent, inputs.get(c + k, []))
            went_on.append(agent.step())
        assert dumps(went_on) == dumps(store.records(b, c + 1, c + ahead)), (name, c)
        graphs.give_back(agent)
    assert built == []  # the graph the switch to main left (the fork's live agent's), undone, then each given back


def test_the_door_rewinds_reuse_one_graph_and_a_fork_after_them_reproduces_the_run(tmp_path):
    ctl = big_run(tmp_path, cycles=60)
    graphs = ctl._base_graph()
    built = []
    build = graphs._build
    graphs._build = lambda: built.append(1) or build()
    views = [ctl.rewind(c) for c in (59, 12, 33, 34, 2, 60)]
    assert [v["cycle"] for v in views] == [59, 12, 33, 34, 2, 60]
    assert views[-1]["goals"] == ctl.view()["goals"]  # the last cycle rewound is the live state
    assert built == []  # the one the switch to main left, then the one given back each time
    main = dumps(ctl.records(1, 60))
    ctl.fork(50, "again")  # over the graph the rewinds gave back, undone to the base
    ctl.run_cycles(10)
    assert dumps(ctl.records(1, 60)) == main
    assert ctl.rewind(45)["cycle"] == 45 and built == []  # the fork kept its graph; main's live one, undone


# ---- the first rewind: a copy of the live graph, not the scenario's files ---------------------
def test_a_copy_answers_alike_and_shares_only_what_it_copies_on_write(tmp_path):
    kg = base_graph()
    kg.add("orca", "is-a", "mammal", 0.9, "inferred:transitive", 3)
    kg.derivations[kg.get(kg.lookup("orca"), kg.lookup("is-a"), kg.lookup("mammal")).key] = ("transitive", ((1, 2, 3),))
    kg.neighbours(kg.lookup("whale"))
    twin = kg.copy()
    assert fingerprint(twin) == fingerprint(kg)
    assert set(vars(twin)) == set(vars(kg))  # a field added to the graph is not forgotten by copy

    def containers(x, seen):  # every list, dict and set reachable from the graph's fields
        if isinstance(x, (list, dict, set)) and id(x) not in seen:
            seen[id(x)] = x
            for v in (x.values() if isinstance(x, dict) else x):
                containers(v, seen)
        return seen

    mine = {}
    for k, v in vars(kg).items():
        containers(v, mine)
    theirs = {}
    for k, v in vars(twin).items():
        containers(v, theirs)
    copy_on_write = {id(v) for v in kg._out + kg._in if v is not None}
    copy_on_write |= {id(v) for v in kg._sp.values() if v.__class__.__name__ != "Triple"}
    assert set(mine) & set(theirs) == copy_on_write  # no index itself, only the lists it holds
    # each goes its own way: additions and undoing on one leave the other as it was
    before = fingerprint(kg)
    for i in range(12, 20):
        twin.add("whale", "is-a", f"class-{i}", cycle=4)  # the (whale, is-a) dict grows
    twin.add("krill", "eats", "plankton")
    fresh = base_graph()
    twin.truncate(len(fresh.symbols), len(fresh.log))  # the orca triple, its derivation, and those
    assert fingerprint(kg) == before
    assert fingerprint(twin) == fingerprint(fresh)
    kg.add("goal:3", "agent:description", "desc:more")
    assert fingerprint(twin) == fingerprint(fresh)


def test_copies_of_copies_changed_in_turn_each_end_as_their_own_history_built_afresh():
    """Copy-on-write (kg.copy) checked against graphs that never shared anything: random
    additions (short lists growing into dicts, new symbols, metadata) and undoing (truncate),
    on an original, its copy and a copy of the copy in turn; each ends equal to a fresh
    graph given the same history."""
    rng = random.Random(5)
    subjects = ["whale", "orca", "krill", "goal:9"] + [f"x{i}" for i in range(6)]
    predicates = ["is-a", "eats", "agent:description"]
    objects = [f"class-{i}" for i in range(14)] + ["ocean", "desc:a"]

    def apply(kg, op):
        if op[0] == "add":
            kg.add(*op[1:])
        elif op[0] == "load":
            kg.load_rows(iter([(op[1], op[2], op[3], 1.0, 0)]))
        else:
            kg.truncate(op[1], op[2])

    graphs = [base_graph()]
    histories: list[list] = [[]]
    points: list[list] = [[(len(graphs[0].symbols), len(graphs[0].log))]]
    def check() -> None:
        for kg, history in zip(graphs, histories):
            fresh = base_graph()
            for op in history:
                apply(fresh, op)
            assert fingerprint(kg) == fingerprint(fresh), history
            assert kg.neighbours(kg.lookup("whale")) == fresh.neighbours(fresh.lookup("whale"))

    for step in range(600):
        if step in (100, 250):  # a copy of the newest graph, with that graph's history so far
            graphs.append(graphs[-1].copy())
            histories.append(list(histories[-1]))
            points.append(list(points[-1]))
            for i in (-2, -1):  # both undo some of what they share, to different points
                at = len(points[i]) - (3 if i == -1 else 6)
                apply(graphs[i], ("truncate", *points[i][at]))
                histories[i].append(("truncate", *points[i][at]))
                del points[i][at + 1:]
        i = rng.randrange(len(graphs))
        roll = rng.random()
        if roll < 0.95:
            op = ("add" if roll < 0.9 else "load", rng.choice(subjects), rng.choice(predicates), rng.choice(objects))
        else:  # back to one of the last ten points of its history
            at = rng.randrange(max(0, len(points[i]) - 10), len(points[i]))
            op = ("truncate", *points[i][at])
            del points[i][at + 1:]
        apply(graphs[i], op)
        histories[i].append(op)
        points[i].append((len(graphs[i].symbols), len(graphs[i].log)))
        if step % 50 == 49:
            check()
    assert len(graphs) == 3 and min(len(kg.log) for kg in graphs) > 100


def test_the_first_rewind_copies_the_live_graph_and_restores_as_a_fresh_rewind(tmp_path):
    """The run's first rewind builds nothing from the scenario's files: it copies the live
    agent's graph, keeps of it what the store knows stored (a fork's live agent replayed its
    parent's cycles after the snapshot; a cycle in progress is not stored) and restores as
    a rewind over a graph built afresh does, on either branch."""
    ctl = big_run(tmp_path, cycles=50)  # the live agent is main's, resumed from its head by a switch
    ctl.fork(47, "late")  # the live agent now: restored at main's snapshot 42, the goal added at 45 replayed
    ctl.run_cycles(6)
    assert ctl.agent.kg_stored is not None and ctl.agent.kg_stored[2] < len(ctl.agent.kg.log)
    ctl.step_phase()  # a cycle in progress: not stored
    store = ctl.store
    sc = load_scenario(str(tmp_path / "big.toml"))
    branches = {b["name"]: b["id"] for b in ctl.branches()}
    for name, c in (("late", 52), ("late", 46), ("main", 44), ("late", 50), ("edited", 50), ("main", 3)):
        ctl._graphs = None  # a run that has not rewound yet
        graphs = ctl._base_graph()

        def refuse():
            raise AssertionError("the scenario's files were read again")

        graphs._build = refuse
        b = branches[name]
        agent = history.rewind(store, b, c, ctl._rebuild, graphs)
        fresh = history.rewind(store, b, c, lambda: build_agent(sc, add_goals=False))
        assert fingerprint(agent.kg) == fingerprint(fresh.kg), (name, c)
        assert json.dumps(snapshot(agent), sort_keys=True) == json.dumps(snapshot(fresh), sort_keys=True)
        graphs.give_back(agent)
    ctl.drop_cycle()
    view = ctl.rewind(51)  # through the door, over the graph given back
    assert view["cycle"] == 51


def test_a_cycle_that_adds_many_triples_is_snapshotted_so_no_rewind_replays_it(tmp_path, monkeypatch):
    from akh_tui.engine.store import session

    monkeypatch.setattr(session, "SNAPSHOT_AFTER_TRIPLES", 50)
    ctl = big_run(tmp_path, cycles=50)
    store, b = ctl.store, ctl.store.find_branch(ctl.run_id, "main")
    sizes = [len(history.rewind(store, b, c, ctl._rebuild).kg.log) for c in range(51)]
    snapshotted = {c for c in range(1, 51) if store.snapshot_before(b, c)[0] == c}
    big = {c for c in range(1, 51) if sizes[c] - sizes[c - 1] >= 50}  # (a goal added between cycles: a few)
    assert big - {c for c in range(1, 51) if c % store.every == 0}, "no cycle of the run added 50 triples"
    assert snapshotted == {c for c in range(1, 51) if c % store.every == 0} | big
