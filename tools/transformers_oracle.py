#!/usr/bin/env python3
"""Count chat requests as vLLM does, through Hugging Face transformers.

Reads one JSON job {"dir", "modelType", "requests": [...]} on stdin, where
each request is a /tokenize chat body (messages, tools,
add_generation_prompt, chat_template_kwargs). The tokenizer files of "dir"
are linked into a temporary folder with a config.json naming "modelType",
as a served model folder has one, and loaded with AutoTokenizer. Each request
goes through vLLM's message preprocessing (vllm/entrypoints/chat_utils.py as
of vLLM 0.20: reasoning read from `reasoning` only, tool-call arguments
through json.loads, empty tool_calls dropped, a tool message's text parts
joined with "\\n", other text parts joined for string-content templates),
then apply_chat_template(tokenize=False) and
encode(add_special_tokens=False). Writes {"transformers": version,
"counts": [n | {"error": type}]}.
"""
import json
import os
import re
import sys
import tempfile

# apply_chat_template renders with jinja2, which transformers does not
# require: imported here, a missing one fails the run instead of every count.
import jinja2  # noqa: F401
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


def openai_format(template):
    # A template that loops over a message's content takes part lists.
    return re.search(r"for\s+\w+\s+in\s+\w+(\[['\"]content['\"]\]|\.content)", template) is not None


def text_parts(content):
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    return [part["text"] for part in content if part.get("type") == "text"]


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


def count(tokenizer, request):
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("tool_use" if request.get("tools") else "default")
    parts_format = openai_format(template or "")
    messages = [preprocess(message, parts_format) for message in request["messages"]]
    kwargs = dict(request.get("chat_template_kwargs") or {})
    text = tokenizer.apply_chat_template(
        messages,
        tools=request.get("tools"),
        tokenize=False,
        add_generation_prompt=request.get("add_generation_prompt", True),
        **kwargs,
    )
    return len(tokenizer.encode(text, add_special_tokens=False))


def main():
    job = json.load(sys.stdin)
    tokenizer = load(job["dir"], job["modelType"])
    counts = []
    for request in job["requests"]:
        try:
            counts.append(count(tokenizer, request))
        except Exception as error:  # compared by the caller as data
            counts.append({"error": type(error).__name__})
    json.dump({"transformers": transformers.__version__, "counts": counts}, sys.stdout)


if __name__ == "__main__":
    main()
