"""Stand-ins for modules vLLM's API server imports when it loads but never
calls on the chat /tokenize path of a text-only model, for an environment
built from an index that lacks them (openai-harmony, the SageMaker hooks,
prometheus-fastapi-instrumentator and others). Python runs this file at start
up in every process whose PYTHONPATH holds its folder, which includes the
subprocess vLLM inspects model classes in.

A stand-in is found only after every real finder has failed, so an installed
package always wins. Calling one raises, except where vLLM wires it into the
app: the SageMaker decorators and bootstrap give back what they were handed,
and the instrumentator's builder adds nothing, so no Prometheus middleware
times requests here.
"""

import importlib.abc
import importlib.machinery
import sys
import types

_ABSENT = frozenset({
    "ijson",
    "llguidance",
    "mistral_common",
    "model_hosting_container_standards",
    "openai_harmony",
    "opentelemetry",
    "partial_json_parser",
    "prometheus_fastapi_instrumentator",
    "pybase64",
    "xgrammar",
})


def _any_schema(cls, source, handler):
    from pydantic_core import core_schema

    return core_schema.any_schema()


class _StandInType(type):
    """A class whose every attribute is another stand-in (enum members)."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand_in(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args, **kwargs):
        raise RuntimeError(f"{cls.__qualname__} is a stand-in: not installed")


def _stand_in(name):
    return _StandInType(
        name,
        (),
        {"__get_pydantic_core_schema__": classmethod(_any_schema)},
    )


def _passthrough(value):
    return value


def _decorator(*args, **kwargs):
    return _passthrough


class _Instrumentator:
    def __init__(self, *args, **kwargs):
        pass

    def add(self, *args, **kwargs):
        return self

    def instrument(self, *args, **kwargs):
        return self

    def expose(self, *args, **kwargs):
        return self


_WIRED = {
    "ijson": {"coroutine": _passthrough},
    "model_hosting_container_standards.sagemaker": {
        "bootstrap": _passthrough,
        "register_ping_handler": _passthrough,
        "register_invocation_handler": _passthrough,
        "register_load_adapter_handler": _decorator,
        "register_unload_adapter_handler": _decorator,
        "stateful_session_manager": _decorator,
        "inject_adapter_id": _decorator,
    },
    "prometheus_fastapi_instrumentator": {"Instrumentator": _Instrumentator},
}


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _stand_in(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] not in _ABSENT:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _StandInModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__dict__.update(_WIRED.get(module.__name__, {}))


sys.meta_path.append(_StandInFinder())
