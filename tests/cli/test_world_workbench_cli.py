"""`akh-tui --world FILE`: what is refused before the world workbench opens."""

from __future__ import annotations


def test_a_bad_world_file_is_exit_2_naming_the_file_and_field(cli, tmp_path):
    bad = tmp_path / "w.toml"
    bad.write_text('[world]\nname = "w"\nrounds = "many"\n[[agents]]\nid = "a"\nscenario = "zoo"\n', encoding="utf-8")
    proc = cli("--world", str(bad), check_rc=2)
    assert "w.toml" in proc.stdout + proc.stderr and "rounds" in proc.stdout + proc.stderr


def test_world_takes_no_scenario(cli):
    proc = cli("--world", "market", "--scenario", "zoo", check_rc=2)
    assert "--world opens a world file" in proc.stderr
