"""Runs `vllm serve` (vLLM's own CLI, API server, renderer and tokenizer) with
the engine core replaced: nothing is loaded onto a device and no request is
ever scheduled, so every endpoint that only renders or tokenizes, /tokenize
among them, runs vLLM's own code, and /v1/chat/completions fails.

    PYTHONPATH=bench/_vllm_api_server python bench/_vllm_api_server/serve.py \\
      MODEL_DIR --port 8000 [any other `vllm serve` option]

AsyncLLM is vLLM's: it builds the renderer, the input processor and the
output processor from the configuration as it does on a GPU machine. Only the
client of the engine core process, which would start the model executor, is
this file's.
"""

import asyncio
import sys
from types import SimpleNamespace

from vllm.v1.engine.core_client import EngineCoreClient


class IdleEngineCore(EngineCoreClient):
    """An engine core that supports text generation and never produces output."""

    def __init__(self):
        self.engine_ranks_managed = [0]
        self.resources = SimpleNamespace(engine_dead=False)
        self._never = asyncio.Event()

    async def get_supported_tasks_async(self):
        return ("generate",)

    async def get_output_async(self):
        await self._never.wait()

    async def add_request_async(self, request):
        raise RuntimeError("this server has no engine: it only renders and tokenizes")

    async def abort_requests_async(self, request_ids):
        pass

    async def reset_mm_cache_async(self):
        pass

    async def is_sleeping_async(self):
        return False

    async def is_scheduler_paused_async(self):
        return False

    def dp_engines_running(self):
        return False

    def shutdown(self, timeout=None):
        pass


def _idle_engine_core(*args, **kwargs):
    return IdleEngineCore()


EngineCoreClient.make_async_mp_client = staticmethod(_idle_engine_core)

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv = ["vllm", "serve", *sys.argv[1:]]
    main()
