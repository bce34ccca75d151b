"""The Orient neighbourhood drawn as a picture (issue 28 §2): `p` in the Orient view; the
drawing itself (tui/orient_picture.py) from an orient dict."""

from __future__ import annotations

from akh_tui.tui.orient_picture import picture

ORIENT = {"activation": {
    "nodes": [{"symbol": "mammal", "activation": 1.0, "hop": 0, "seed": True},
              {"symbol": "dog", "activation": 0.5, "hop": 1, "seed": False,
               "via": {"from": "mammal", "triple": "dog is-a mammal"}},
              {"symbol": "cat", "activation": 0.5, "hop": 1, "seed": False},
              {"symbol": "animal", "activation": 0.5, "hop": 1, "seed": False},
              {"symbol": "sea lion", "activation": 0.35, "hop": 1, "seed": False}],
    "edges": [{"from": "mammal", "to": "dog", "triple": "dog is-a mammal", "provenance": "asserted"},
              {"from": "mammal", "to": "cat", "triple": "cat is-a mammal", "provenance": "asserted"},
              {"from": "mammal", "to": "animal", "triple": "mammal is-a animal", "provenance": "asserted"},
              {"from": "mammal", "to": "sea lion", "triple": "sea lion is-a mammal", "provenance": "inferred:x"},
              {"from": "dog", "to": "animal", "triple": "dog is-a animal", "provenance": "inferred:t"}]}}


def test_the_focus_in_a_box_its_subjects_left_its_objects_right():
    lines = picture(ORIENT, "mammal", 70, 10).plain.splitlines()
    assert lines[0] == "mammal: 3 in, 1 out · activation 1.00, hop 0"
    drawn = "\n".join(lines[1:])
    assert "╭────────╮" in drawn and "┤ mammal ├" in drawn and "╰────────╯" in drawn
    for arrow in ("dog 0.50 ─is-a─▶", "cat 0.50 ─is-a─▶", "sea lion 0.35 ─is-a─▶", "─is-a─▶ animal 0.50"):
        assert arrow in drawn, arrow
    assert "dog is-a animal" not in drawn and "dog ─is-a─▶ animal" not in drawn  # not mammal's triple
    # every left arrow ends at the bus, which joins the box's left side
    box_col = lines[2].index("┤")
    assert all(line[box_col - 1] in "┐┤┘┼┬┴│" for line in lines[1:4])


def test_a_narrow_box_counts_what_does_not_fit():
    many = {"activation": {"nodes": [{"symbol": "x", "activation": 1.0, "hop": 0, "seed": True}],
                           "edges": [{"from": "x", "to": f"n{i}", "triple": f"n{i} p x", "provenance": "asserted"}
                                     for i in range(9)]}}
    lines = picture(many, "x", 60, 5).plain.splitlines()
    assert len(lines) == 1 + 4 and lines[-1].strip().startswith("… 6 more")
    assert "9 in ─▶─┤ x" in picture(many, "x", 16, 5).plain  # too narrow for names: the count


def _zoo_orient_picture(then: list[str]):
    async def keys(pilot):
        for _ in range(3):
            await pilot.press("space")
        for key in ["o", "p", *then]:
            await pilot.press(key)
        await pilot.pause()

    return keys


def test_orient_picture_120x36(snap_compare, workbench):
    # zoo after 3 cycles, goal #2 (Classify whales): mammal, its six subjects and three objects
    assert snap_compare(workbench("zoo"), run_before=_zoo_orient_picture([]), terminal_size=(120, 36))


def test_orient_picture_80x24(snap_compare, workbench):
    # down to whale: its objects on the right, none on the left
    assert snap_compare(workbench("zoo"), run_before=_zoo_orient_picture(["down"]), terminal_size=(80, 24))
