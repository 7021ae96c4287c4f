/**
 * The Python script that asks an installed Hermes Agent for its compression
 * window. It ships inside the package as text (the package may be loaded
 * from a remote URL, where no file of it can be run) and is passed to
 * `python -c`. It receives only the config path, model names and a context
 * length, never request content, and prints one JSON line.
 *
 * The script computes no window itself. For each model it builds the object
 * Hermes runs, `run_agent.AIAgent`, with the arguments Hermes' CLI gives it
 * (the model, `model.provider` and `model.base_url` of the config, and the
 * CLI's `max_tokens` reading: `HERMES_MAX_TOKENS`, else an integer
 * `model.max_tokens`), quiet, without memory, context files or tools, and
 * reads back `agent.context_compressor.threshold_tokens`, its
 * `context_length` and `agent.compression_enabled`. Everything in between
 * (per-model thresholds, caps, output reservations, engines) is Hermes' own
 * code. Where the agent cannot be built offline, the script builds Hermes'
 * `ContextCompressor` the way `init_agent()` does (0.18 wiring, plus
 * `model_thresholds` and `threshold_tokens_cap` where the compressor takes
 * them, as 0.19 does) and says so in its answer.
 *
 * What keeps the user's machine as it was:
 * - Hermes runs with `HERMES_HOME` set to a temporary folder holding a copy
 *   of `config.yaml` (logs, session folders and caches go there, and the
 *   folder is removed); the user's `.env` is only read, for
 *   `HERMES_MAX_TOKENS`.
 * - Every socket connection and name lookup fails inside the script. An
 *   agent that tried one before its compressor was built (or that changed
 *   its compressor after a refused one) is not trusted: the compressor is
 *   built instead. Refusals after it (Hermes' Ollama detection for a local
 *   base URL) are counted in the answer.
 * - The agent gets a placeholder API key with the base URL, so Hermes
 *   builds its client without looking up credentials (Hermes'
 *   `prompt-size` builds its offline agent the same way).
 *
 * @module
 */

/** The script, run as `python -c SCRIPT REQUEST_JSON`. */
export const HERMES_PROBE_SCRIPT = String.raw`
import copy
import functools
import inspect
import json
import os
import shutil
import socket
import sys
import tempfile

TRUE = {"true", "1", "yes"}
# Hermes builds its client from this without reading any credential.
PLACEHOLDER_KEY = "incontext-window-probe"
BLOCKED = [0]


def block_network():
    def refuse(*args, **kwargs):
        BLOCKED[0] += 1
        raise OSError("incontext: no network while asking Hermes for its window")

    def refuse_ex(*args, **kwargs):
        BLOCKED[0] += 1
        return 101  # ENETUNREACH

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse_ex
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def read_dotenv(home, name):
    # The user's .env is read, never loaded: Hermes' own loader may rewrite it.
    path = os.path.join(home, ".env")
    if not os.path.isfile(path):
        return None
    try:
        from dotenv import dotenv_values
    except Exception:
        return None
    try:
        return dotenv_values(path).get(name)
    except Exception:
        return None


def parse(text):
    try:
        import yaml
        return yaml.safe_load(text)
    except ImportError:
        return json.loads(text)


def private_home(config_path, context_length):
    """A temporary HERMES_HOME holding the config, with the served context
    length written in when the config names none."""
    home = tempfile.mkdtemp(prefix="incontext-hermes-")
    target = os.path.join(home, "config.yaml")
    with open(config_path, encoding="utf-8") as file:
        text = file.read()
    if context_length is not None:
        root = parse(text) or {}
        if isinstance(root, dict):
            model = root.get("model")
            if isinstance(model, str):
                model = {"default": model}
            if not isinstance(model, dict):
                model = {}
            if model.get("context_length") is None:
                model["context_length"] = context_length
                root["model"] = model
                # JSON is YAML: Hermes reads it back as the same mapping.
                text = json.dumps(root, default=str)
    with open(target, "w", encoding="utf-8") as file:
        file.write(text)
    return home


def hermes_version():
    try:
        from importlib.metadata import version
        return str(version("hermes-agent")), "hermes-agent distribution metadata"
    except Exception:
        pass
    try:
        import hermes_cli
        return str(hermes_cli.__version__), "hermes_cli.__version__"
    except Exception:
        return "unknown", "none"


def cli_max_tokens(home, model_section):
    # Hermes' CLI: HERMES_MAX_TOKENS (its .env wins over the shell), else an
    # integer model.max_tokens; an unreadable variable passes None, and the
    # agent then reads model.max_tokens itself.
    env = read_dotenv(home, "HERMES_MAX_TOKENS") or os.environ.get("HERMES_MAX_TOKENS")
    if env:
        try:
            return int(env)
        except (TypeError, ValueError):
            return None
    if isinstance(model_section, dict):
        value = model_section.get("max_tokens")
        return value if isinstance(value, int) else None
    return None


BUILT = {}


def compressor_class():
    from agent.context_compressor import ContextCompressor
    if not getattr(ContextCompressor.__init__, "_incontext_watched", False):
        original = ContextCompressor.__init__

        # Notes how many connections were refused by the time each
        # compressor was built, and what it held then; wraps keeps the
        # signature readable.
        @functools.wraps(original)
        def watched(self, *args, **kwargs):
            original(self, *args, **kwargs)
            BUILT[id(self)] = (
                BLOCKED[0],
                getattr(self, "threshold_tokens", None),
                getattr(self, "context_length", None),
            )

        watched._incontext_watched = True
        ContextCompressor.__init__ = watched
    return ContextCompressor


def self_check(compressor):
    """W through Hermes' own threshold function, when it has one."""
    compute = getattr(type(compressor), "_compute_threshold_tokens", None)
    if not callable(compute):
        return None
    try:
        value = int(compute(
            compressor.context_length,
            compressor.threshold_percent,
            getattr(compressor, "max_tokens", None),
        ))
        apply_cap = getattr(compressor, "_apply_threshold_tokens_cap", None)
        if callable(apply_cap):
            probe = copy.copy(compressor)
            probe.threshold_tokens = value
            probe._apply_threshold_tokens_cap()
            value = int(probe.threshold_tokens)
        return value
    except Exception:
        return None


def reading(compressor, enabled, source, file):
    length = int(compressor.context_length)
    answer = {
        "window": int(compressor.threshold_tokens) if enabled else length,
        "context_length": length,
        "compression_enabled": bool(enabled),
        "max_tokens": getattr(compressor, "max_tokens", None),
        "source": source,
        "file": file,
    }
    check = self_check(compressor) if enabled else None
    if check is not None:
        answer["check"] = check
    return answer


def from_agent(model, route):
    """The agent's reading, or None when a refused connection may have changed it."""
    before = BLOCKED[0]
    import run_agent
    prewarm = getattr(run_agent, "_openrouter_prewarm_done", None)
    if prewarm is not None:
        prewarm.set()
    agent = run_agent.AIAgent(
        model=model,
        provider=route["provider"] or None,
        base_url=route["base_url"],
        api_key=PLACEHOLDER_KEY,
        max_tokens=route["max_tokens"],
        quiet_mode=True,
        skip_memory=True,
        skip_context_files=True,
        enabled_toolsets=[],
        platform="cli",
    )
    compressor = agent.context_compressor
    if not isinstance(compressor, compressor_class()):
        return {"error": "engine"}
    built = BUILT.get(id(compressor))
    # A connection refused before the compressor was built may have changed
    # what it was built with; one refused after it, only if it changed since.
    if built is None or built[0] != before:
        return None
    now = (BLOCKED[0], compressor.threshold_tokens, compressor.context_length)
    if now[0] != built[0] and now[1:] != built[1:]:
        return None
    enabled = getattr(agent, "compression_enabled", True)
    answer = reading(compressor, enabled, "agent", os.path.abspath(run_agent.__file__))
    answer["refused"] = now[0] - built[0]
    return answer


def number(value, kind, default=None):
    try:
        return kind(value)
    except (TypeError, ValueError):
        return default


def from_compressor(model, route, config):
    """Hermes' compressor built as init_agent() builds it."""
    ContextCompressor = compressor_class()
    context_section = config.get("context") or {}
    if isinstance(context_section, dict):
        engine = context_section.get("engine", "compressor") or "compressor"
        if engine != "compressor":
            return {"error": "engine"}
    compression = config.get("compression") or {}
    if not isinstance(compression, dict):
        compression = {}
    threshold = float(compression.get("threshold", 0.50))
    autoraise = str(compression.get("codex_gpt55_autoraise", True)).lower() in TRUE
    provider = route["provider"]
    try:
        from agent.auxiliary_client import _compression_threshold_for_model
        from agent.auxiliary_client import _is_codex_gpt54_or_gpt55, _is_codex_spark
        from agent.agent_init import _resolve_compression_threshold
        override = _compression_threshold_for_model(
            model, provider, allow_codex_gpt55_autoraise=autoraise,
        )
        threshold = _resolve_compression_threshold(
            threshold, override, model=model,
            is_codex_autoraise=(
                _is_codex_gpt54_or_gpt55(model, provider) or _is_codex_spark(model, provider)
            ),
        )[0]
    except Exception:
        pass
    max_tokens = route["max_tokens"]
    if max_tokens is None:
        configured = route["model_section"].get("max_tokens")
        if configured is not None and not isinstance(configured, bool):
            parsed = number(configured, int)
            max_tokens = parsed if parsed is not None and parsed > 0 else None
    options = dict(
        model=model,
        threshold_percent=threshold,
        quiet_mode=True,
        base_url=route["base_url"],
        api_key=PLACEHOLDER_KEY,
        config_context_length=number(route["model_section"].get("context_length"), int),
        provider=provider,
        max_tokens=max_tokens,
    )
    parameters = inspect.signature(ContextCompressor.__init__).parameters
    # 0.19 added both keys; a compressor that takes neither is wired as 0.18.
    wiring = "0.18"
    if "model_thresholds" in parameters or "threshold_tokens_cap" in parameters:
        wiring = "0.19"
    if "model_thresholds" in parameters:
        raw = compression.get("model_thresholds") or {}
        options["model_thresholds"] = {
            str(key): float(value) for key, value in raw.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        } if isinstance(raw, dict) else {}
    if "threshold_tokens_cap" in parameters:
        cap = compression.get("threshold_tokens")
        cap = None if cap is None else number(cap, int)
        options["threshold_tokens_cap"] = cap if cap is not None and cap > 0 else None
    compressor = ContextCompressor(**options)
    enabled = str(compression.get("enabled", True)).lower() in TRUE
    module = sys.modules[ContextCompressor.__module__]
    answer = reading(compressor, enabled, "compressor", os.path.abspath(module.__file__))
    answer["wiring"] = wiring
    return answer


def window_for(model, route, config):
    reason = None
    if not route["base_url"]:
        reason = "base_url"
    else:
        try:
            answer = from_agent(model, route)
        except Exception as error:
            reason = type(error).__name__
        else:
            if answer is not None:
                return answer
            reason = "network"
    answer = from_compressor(model, route, config)
    answer["fallback"] = reason
    return answer


def registry_base_url(provider):
    try:
        from hermes_cli.auth import PROVIDER_REGISTRY
        entry = PROVIDER_REGISTRY.get(provider)
        return str(getattr(entry, "inference_base_url", "") or "")
    except Exception:
        return ""


def main(request):
    config_path = os.path.abspath(request["config"])
    user_home = os.path.dirname(config_path)
    block_network()
    home = None
    try:
        home = private_home(config_path, request.get("context_length"))
        os.environ["HERMES_HOME"] = home
        try:
            from hermes_cli.config import load_config
            compressor_class()
        except Exception as error:
            return {"error": "import", "type": type(error).__name__}
        version, version_source = hermes_version()
        answer = {"hermes_version": version, "version_source": version_source}
        config = load_config()
        model_section = config.get("model", {})
        if isinstance(model_section, dict):
            default = model_section.get("default") or model_section.get("model") or ""
            provider = model_section.get("provider") or ""
            base_url = model_section.get("base_url") or ""
        else:
            default, provider, base_url = model_section or "", "", ""
            model_section = {}
        if number(model_section.get("context_length"), int) is None:
            return dict(answer, error="context_length")
        route = {
            "provider": provider,
            "base_url": base_url or registry_base_url(provider),
            "max_tokens": cli_max_tokens(user_home, model_section),
            "model_section": model_section,
        }
        models = {}
        for model in [default] + list(request.get("models") or []):
            if model in models:
                continue
            window = window_for(model, route, config)
            if "error" in window:
                return dict(answer, **window)
            models[model] = window
        answer.update(models[default])
        answer.update({
            "model": default,
            "provider": provider,
            "base_url": base_url,
            "models": models,
        })
        return answer
    finally:
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)


def run():
    out = sys.stdout
    # Whatever Hermes prints goes to stderr: stdout carries the answer only.
    sys.stdout = sys.stderr
    try:
        answer = main(json.loads(sys.argv[1]))
    except Exception as error:
        answer = {"error": "failed", "type": type(error).__name__}
    out.write(json.dumps(answer) + "\n")
    out.flush()
    sys.stderr.flush()
    # Threads Hermes started must not keep the answer waiting.
    os._exit(0)


run()
`;
