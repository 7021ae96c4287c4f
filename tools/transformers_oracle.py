#!/usr/bin/env python3
"""Count chat requests as vLLM does, through Hugging Face transformers.

Reads one JSON job {"dir", "modelType", "requests": [...], "chatTemplate"?,
"contentFormat"?} on stdin, where each request is a /tokenize chat body
(messages, tools, add_generation_prompt, chat_template_kwargs);
"chatTemplate" overrides the folder's template as vLLM's --chat-template
does, and "contentFormat" ("auto", "string" or "openai") is vLLM's
--chat-template-content-format. The tokenizer files of "dir"
are linked into a temporary folder with a config.json naming "modelType",
as a served model folder has one, and loaded with AutoTokenizer. Each request
goes through vLLM's message preprocessing (vllm/entrypoints/chat_utils.py as
of vLLM 0.20: reasoning read from `reasoning` only, tool-call arguments
through json.loads, empty tool_calls dropped, a tool message's text parts
joined with "\\n", other text parts joined for string-content templates),
then apply_chat_template(tokenize=False) and
encode(add_special_tokens=False). The content format is detected as vLLM's
_detect_content_format (vllm/renderers/hf.py) decides it, over jinja2's own
syntax tree. Writes {"transformers": version, "formats": [format per
request], "counts": [n | {"error": type}]}. A JSON array of jobs gets an
array of answers, from one process.
"""
import json
import os
import sys
import tempfile
from collections import deque

# apply_chat_template renders with jinja2, which transformers does not
# require: imported here, a missing one fails the run instead of every count.
import jinja2
import jinja2.nodes as nodes
import transformers
from transformers import AutoTokenizer

FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def load(directory, model_type):
    folder = tempfile.mkdtemp()
    for name in FILES:
        source = os.path.join(directory, name)
        if os.path.exists(source):
            os.symlink(source, os.path.join(folder, name))
    with open(os.path.join(folder, "config.json"), "w") as out:
        json.dump({"model_type": model_type}, out)
    return AutoTokenizer.from_pretrained(folder)


class NotAName(Exception):
    """vLLM asserts the targets it follows are plain names; it falls back when one is not."""


def target_name(node):
    if not isinstance(node, nodes.Name):
        raise NotAName()
    return node.name


def is_var(node, name):
    return isinstance(node, nodes.Name) and node.ctx == "load" and node.name == name


def is_attr(node, name, key):
    if isinstance(node, nodes.Getitem):
        return is_var(node.node, name) and isinstance(node.arg, nodes.Const) and node.arg.value == key
    if isinstance(node, nodes.Getattr):
        return is_var(node.node, name) and node.attr == key
    return False


def is_var_or_elems(node, name, key=None):
    # The access itself, or under filters, tests and slices.
    if isinstance(node, nodes.Filter):
        return node.node is not None and is_var_or_elems(node.node, name, key)
    if isinstance(node, nodes.Test):
        return is_var_or_elems(node.node, name, key)
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice):
        return is_var_or_elems(node.node, name, key)
    return is_attr(node, name, key) if key else is_var(node, name)


def detect_openai(tree):
    # Names that hold the message list, followed through assignments.
    lists, pending, seen = ["messages"], deque(["messages"]), set()
    while pending:
        name = pending.popleft()
        if name in seen:
            continue
        seen.add(name)
        for assign in tree.find_all(nodes.Assign):
            if is_var_or_elems(assign.node, name):
                lists.append(target_name(assign.target))
                pending.append(assign.target.name)
    # Loop variables over those lists are messages.
    messages = [
        target_name(loop.target)
        for loop in tree.find_all(nodes.For)
        if any(is_var_or_elems(loop.iter, name) for name in lists)
    ]
    # A loop over a message's content, or over a variable named content.
    for loop in tree.find_all(nodes.For):
        over = any(is_var_or_elems(loop.iter, name, "content") for name in messages)
        if over or (isinstance(loop.iter, nodes.Name) and loop.iter.name == "content"):
            target_name(loop.target)
            return True
    return False


def content_format(tokenizer, template, given):
    if given in ("string", "openai"):
        return given
    try:
        # Compiled first, as vLLM does: a template jinja2 refuses gets the default.
        compiled = transformers.utils.chat_template_utils._compile_jinja_template(template)
        tree = compiled.environment.parse(template)
        return "openai" if detect_openai(tree) else "string"
    except (NotAName, jinja2.TemplateError):
        return "string"


def text_parts(content):
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    return [part["text"] for part in content if part.get("type") == "text"]


def dump_tool(tool):
    # vLLM's ChatCompletionToolsParam(**tool).model_dump().
    function = tool["function"]
    dumped = {
        "name": function["name"],
        "description": function.get("description"),
        "parameters": function.get("parameters"),
    }
    dumped.update({k: v for k, v in function.items() if k not in dumped and k != "defer_loading"})
    return {"type": tool.get("type", "function"), "function": dumped}


def preprocess(message, parts_format):
    role = message["role"]
    texts = text_parts(message.get("content"))
    if role == "tool" or not parts_format:
        content = "\n".join(texts)
    else:
        content = [{"type": "text", "text": text} for text in texts]
    result = {"role": role, "content": content}
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls:
            result["tool_calls"] = calls
            for call in calls:
                arguments = call["function"].get("arguments")
                if arguments:
                    if not isinstance(arguments, (dict, list)):
                        call["function"]["arguments"] = json.loads(arguments)
                else:
                    call["function"]["arguments"] = {}
        if message.get("reasoning") is not None:
            result["reasoning"] = message["reasoning"]
            result["reasoning_content"] = message["reasoning"]
    elif role == "tool" and "tool_call_id" in message:
        result["tool_call_id"] = message["tool_call_id"]
    if isinstance(message.get("name"), str):
        result["name"] = message["name"]
    return result


def template_of(tokenizer, job, request):
    template = job.get("chatTemplate") or tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("tool_use" if request.get("tools") else "default")
    return template


def count(tokenizer, template, parts_format, request):
    messages = [preprocess(message, parts_format) for message in request["messages"]]
    kwargs = dict(request.get("chat_template_kwargs") or {})
    tools = request.get("tools")
    text = tokenizer.apply_chat_template(
        messages,
        tools=None if tools is None else [dump_tool(tool) for tool in tools],
        chat_template=template,
        tokenize=False,
        add_generation_prompt=request.get("add_generation_prompt", True),
        **kwargs,
    )
    return len(tokenizer.encode(text, add_special_tokens=False))


def answer(job, tokenizers):
    key = (job["dir"], job["modelType"])
    if key not in tokenizers:
        tokenizers[key] = load(job["dir"], job["modelType"])
    tokenizer = tokenizers[key]
    counts, formats = [], []
    for request in job["requests"]:
        template = template_of(tokenizer, job, request)
        parts_format = content_format(tokenizer, template or "", job.get("contentFormat", "auto"))
        formats.append(parts_format)
        try:
            counts.append(count(tokenizer, template, parts_format == "openai", request))
        except Exception as error:  # compared by the caller as data
            counts.append({"error": type(error).__name__})
    return {"transformers": transformers.__version__, "formats": formats, "counts": counts}


def main():
    job = json.load(sys.stdin)
    tokenizers = {}
    if isinstance(job, list):
        json.dump([answer(j, tokenizers) for j in job], sys.stdout)
    else:
        json.dump(answer(job, tokenizers), sys.stdout)


if __name__ == "__main__":
    main()
