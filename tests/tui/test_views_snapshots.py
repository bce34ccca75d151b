"""Snapshots of issue 13's views: the plots screen, the layouts at 120×36 and 80×24, the
terminal-too-small notice. Sync tests (snap_compare needs a plain def); the workbench runs engine
commands on the UI thread, so the picture depends only on the keys pressed."""

SIZE = (120, 36)


def test_plots_screen(snap_compare, workbench):
    # solar, 14 cycles: reflections at 5 and 10, a stalled goal decomposed; the cursor on cycle 10
    assert snap_compare(workbench("solar"), press=["space"] * 14 + ["P"] + ["left"] * 4, terminal_size=SIZE)


def _solar_goal(goal_id: int, then: list[str]):
    async def open_goal(pilot):
        for _ in range(14):
            await pilot.press("space")
        pilot.app.open_goal(goal_id)
        await pilot.pause()
        for key in then:
            await pilot.press(key)
        await pilot.pause()

    return open_goal


def test_goal_detail_says_why_the_moons_of_mars_are_not_found(snap_compare, workbench):
    # the example: (phobos is-a moon) inferred at cycle 6, kg_query(phobos) would return it
    assert snap_compare(workbench("solar"), run_before=_solar_goal(2, []), terminal_size=SIZE)


def test_orient_view_with_the_symbol_inspector(snap_compare, workbench):
    # from goal #2's detail: o, then down to phobos (its inferred is-a moon and derivation)
    assert snap_compare(workbench("solar"), run_before=_solar_goal(2, ["o", "down"]), terminal_size=SIZE)


def _findings(grammar_key: str):
    async def open_findings(pilot):
        for _ in range(14):
            await pilot.press("space")
        pilot.app.open_findings(1)
        await pilot.pause()
        await pilot.press(grammar_key)
        await pilot.pause()

    return open_findings


def test_findings_narrative(snap_compare, workbench):
    assert snap_compare(workbench("solar"), run_before=_findings("1"), terminal_size=SIZE)


def test_findings_formal(snap_compare, workbench):
    assert snap_compare(workbench("solar"), run_before=_findings("2"), terminal_size=SIZE)


def test_findings_terse(snap_compare, workbench):
    assert snap_compare(workbench("solar"), run_before=_findings("3"), terminal_size=SIZE)


def test_terminal_too_small_says_so(snap_compare, workbench):
    assert snap_compare(workbench("zoo"), press=["space"], terminal_size=(70, 20))
