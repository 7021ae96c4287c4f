#!/usr/bin/env python3
"""Render chat templates with jinja2 set up exactly as transformers sets it up.

Reads one JSON job {"template", "context" (or "context_json" text and its
"context_key"), "now"?} (or a JSON array of jobs)
from stdin and writes {"text": ...} or {"error": {"type", "message"}} (or an
array of them) to stdout. "now" is an ISO 8601 date-time used as the
strftime_now clock, so renders are reproducible.
"""
import json
import sys
from datetime import datetime

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    """transformers' {% generation %} tag: renders its body, emits no tags."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_render_assistant", [])
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_assistant(self, caller):
        return caller()


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        x,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
    )


def render(job):
    now = datetime.fromisoformat(job.get("now", "2026-01-02T03:04:05"))
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[AssistantTracker, loopcontrols],
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: now.strftime(fmt)
    try:
        context = job.get("context")
        if context is None:  # JSON text, read by json.loads like a server
            context = json.loads(job["context_json"])[job["context_key"]]
        return {"text": env.from_string(job["template"]).render(**context)}
    except Exception as error:  # reported as data, compared by the caller
        return {"error": {"type": type(error).__name__, "message": str(error)}}


def main():
    job = json.load(sys.stdin)
    result = [render(j) for j in job] if isinstance(job, list) else render(job)
    json.dump(result, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
