/**
 * The Python script that asks an installed Hermes Agent for its compression
 * window. It ships inside the package as text (the package may be loaded
 * from a remote URL, where no file of it can be run) and is passed to
 * `python -c`. It receives only the config path, model names and a context
 * length, never request content, and prints one JSON line.
 *
 * The script computes nothing itself: it loads the config with Hermes' own
 * `hermes_cli.config.load_config()`, takes the per-model threshold from
 * Hermes' own functions where this Hermes has them, builds Hermes'
 * `agent.context_compressor.ContextCompressor` as Hermes' `init_agent()`
 * does, and reads back its `threshold_tokens` and `context_length`. The few
 * lines of wiring between those calls follow `init_agent()` (Hermes 0.18.2):
 * the threshold, `enabled` and `context.engine` readings, the output
 * reservation (`HERMES_MAX_TOKENS`, else `model.max_tokens`).
 *
 * @module
 */

/** The script, run as `python -c SCRIPT REQUEST_JSON`. */
export const HERMES_PROBE_SCRIPT = String.raw`
import json
import os
import sys

TRUE = {"true", "1", "yes"}


def main(out):
    request = json.loads(sys.argv[1])
    # Hermes reads $HERMES_HOME/config.yaml and $HERMES_HOME/.env.
    home = os.path.dirname(os.path.abspath(request["config"]))
    os.environ["HERMES_HOME"] = home
    try:
        import hermes_cli
        from hermes_cli.config import load_config
        from agent.context_compressor import ContextCompressor
    except Exception as error:
        return {"error": "import", "type": type(error).__name__}
    try:
        from hermes_cli.env_loader import load_hermes_dotenv
    except Exception:
        load_hermes_dotenv = None
    if load_hermes_dotenv is not None:
        load_hermes_dotenv(hermes_home=home)
    config = load_config()
    answer = {
        "hermes_version": str(getattr(hermes_cli, "__version__", "unknown")),
    }
    context_section = config.get("context") or {}
    engine = "compressor"
    if isinstance(context_section, dict):
        engine = context_section.get("engine", "compressor") or "compressor"
    if engine != "compressor":
        return dict(answer, error="engine")
    model_section = config.get("model", {})
    compression = config.get("compression", {})
    if not isinstance(compression, dict):
        compression = {}
    if isinstance(model_section, dict):
        default = model_section.get("default") or model_section.get("model") or ""
        provider = model_section.get("provider") or ""
        base_url = model_section.get("base_url") or ""
        configured_context = model_section.get("context_length")
        configured_max = model_section.get("max_tokens")
    else:
        default, provider, base_url = model_section or "", "", ""
        configured_context, configured_max = None, None
    context = None
    if configured_context is not None:
        try:
            context = int(configured_context)
        except (TypeError, ValueError):
            context = None
    if context is None:
        context = request.get("context_length")
    if context is None:
        return dict(answer, error="context_length")
    max_tokens = None
    env_max = os.environ.get("HERMES_MAX_TOKENS")
    if env_max:
        try:
            max_tokens = int(env_max)
        except (TypeError, ValueError):
            max_tokens = None
    elif configured_max is not None and not isinstance(configured_max, bool):
        try:
            max_tokens = int(configured_max)
        except (TypeError, ValueError):
            max_tokens = None
    enabled = str(compression.get("enabled", True)).lower() in TRUE
    threshold = float(compression.get("threshold", 0.50))
    autoraise = str(compression.get("codex_gpt55_autoraise", True)).lower() in TRUE

    def threshold_for(model):
        # As init_agent(): a Hermes without these functions keeps the threshold.
        try:
            from agent.auxiliary_client import _compression_threshold_for_model
            from agent.auxiliary_client import _is_codex_gpt54_or_gpt55
            from agent.auxiliary_client import _is_codex_spark
            from agent.agent_init import _resolve_compression_threshold
            override = _compression_threshold_for_model(
                model, provider, allow_codex_gpt55_autoraise=autoraise,
            )
            return _resolve_compression_threshold(
                threshold, override, model=model,
                is_codex_autoraise=(
                    _is_codex_gpt54_or_gpt55(model, provider)
                    or _is_codex_spark(model, provider)
                ),
            )[0]
        except Exception:
            return threshold

    def window_for(model):
        compressor = ContextCompressor(
            model=model,
            threshold_percent=threshold_for(model),
            quiet_mode=True,
            base_url=base_url,
            api_key="",
            config_context_length=context,
            provider=provider,
            max_tokens=max_tokens,
        )
        length = int(compressor.context_length)
        window = int(compressor.threshold_tokens) if enabled else length
        return {"window": window, "context_length": length}

    models = {}
    for model in [default] + list(request.get("models") or []):
        models[model] = window_for(model)
    answer.update(models[default])
    answer.update({
        "model": default,
        "provider": provider,
        "base_url": base_url,
        "compression_enabled": enabled,
        "max_tokens": max_tokens,
        "models": models,
    })
    return answer


def run():
    out = sys.stdout
    # Whatever Hermes prints goes to stderr: stdout carries the answer only.
    sys.stdout = sys.stderr
    try:
        answer = main(out)
    except Exception as error:
        answer = {"error": "failed", "type": type(error).__name__}
    out.write(json.dumps(answer) + "\n")
    out.flush()


run()
`;
