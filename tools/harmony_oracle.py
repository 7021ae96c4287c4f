#!/usr/bin/env python3
"""Independent oracle: vLLM's chat->Harmony conversion (harmony_utils.py), its
Responses->Harmony conversion (responses/serving.py, responses/harmony.py,
protocol.py's validators) and openai-harmony 0.0.8's render (encoding.rs),
written from their sources. Reads JSON lines {"request":..., "date":...} (a
chat request) or {"responses":..., "date":..., "system_instructions": bool};
writes the render as a list of ["T", token] / ["X", text] pieces, or
{"error": kind}."""
import json, sys

def rust_lines(s):
    out = s.split("\n")
    if out and out[-1] == "":
        out.pop()
    return [l[:-1] if l.endswith("\r") else l for l in out]

def is_enum(s):
    e = s.get("enum") if isinstance(s, dict) else None
    return isinstance(e, list) and len(e) > 0

def disp(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)

def g(s, k):
    return s.get(k) if isinstance(s, dict) else None

def ts(schema, indent):
    if isinstance(g(schema, "oneOf"), list):
        out = ""
        for v in schema["oneOf"]:
            out += f"\n{indent} | "
            t = ts(v, indent + "   ")
            if g(v, "nullable") is True and "null" not in t:
                t += " | null"
            out += t
            tc = []
            if isinstance(g(v, "description"), str):
                tc.append(v["description"])
            if isinstance(v, dict) and "default" in v:
                d = v["default"]
                tc.append(f'default: "{d}"' if isinstance(d, str) and not is_enum(v) else f"default: {disp(d)}")
            if tc:
                out += " // " + " ".join(tc)
        return out
    ty = g(schema, "type")
    if isinstance(ty, list):
        names = ["number" if t == "integer" else t for t in ty if isinstance(t, str)]
        if names:
            return " | ".join(names)
    if ty == "object":
        out = ""
        if isinstance(g(schema, "description"), str):
            out += f"{indent}// {schema['description']}\n"
        out += "{\n"
        props = g(schema, "properties")
        if isinstance(props, dict):
            req = set(r for r in (g(schema, "required") if isinstance(g(schema, "required"), list) else []) if isinstance(r, str))
            for key, val in props.items():
                opt = "" if key in req else "?"
                if isinstance(g(val, "title"), str):
                    out += f"{indent}// {val['title']}\n{indent}//\n"
                has_oneof = isinstance(val, dict) and "oneOf" in val
                if not has_oneof and isinstance(g(val, "description"), str):
                    out += f"{indent}// {val['description']}\n"
                ex = g(val, "examples")
                if isinstance(ex, list) and ex:
                    out += f"{indent}// Examples:\n"
                    for e in ex:
                        if isinstance(e, str):
                            out += f'{indent}// - "{e}"\n'
                if isinstance(g(val, "oneOf"), list):
                    arr = val["oneOf"]
                    pd = val["description"] if isinstance(g(val, "description"), str) else None
                    skip = pd is not None and arr and isinstance(g(arr[0], "description"), str) and arr[0]["description"] == pd
                    above = False
                    if not skip and pd is not None:
                        out += f"{indent}// {pd}\n"
                        above = True
                    if "default" in val:
                        d = val["default"]
                        if isinstance(d, str) and not is_enum(val):
                            out += f'{indent}// default: "{d}"\n'
                        elif isinstance(d, str):
                            out += f"{indent}// default: {d}\n"
                        else:
                            out += f"{indent}// default: {disp(d)}\n"
                    out += f"{indent}{key}{opt}:\n"
                    for i, v in enumerate(arr):
                        out += f"{indent} | "
                        t = ts(v, indent + "   ")
                        if g(v, "nullable") is True and "null" not in t:
                            t += " | null"
                        out += t
                        tc = []
                        if i == 0 and above:
                            pass
                        elif isinstance(g(v, "description"), str) and v["description"] != pd:
                            tc.append(v["description"])
                        if isinstance(v, dict) and "default" in v:
                            d = v["default"]
                            if isinstance(d, str) and not is_enum(v):
                                tc.append(f'default: "{d}"')
                            elif isinstance(d, str):
                                tc.append(f"default: {d}")
                            else:
                                tc.append(f"default: {disp(d)}")
                        if tc:
                            out += " // " + " ".join(tc)
                        out += "\n"
                    out += f"{indent},\n"
                    continue
                out += f"{indent}{key}{opt}: "
                t = ts(val, indent + "    ")
                if g(val, "nullable") is True and "null" not in t:
                    t += " | null"
                out += t + ","
                if not has_oneof and isinstance(val, dict) and "default" in val:
                    d = val["default"]
                    if isinstance(d, str) and not is_enum(val):
                        out += f' // default: "{d}"'
                    elif isinstance(d, str):
                        out += f" // default: {d}"
                    else:
                        out += f" // default: {disp(d)}"
                out += "\n"
        return out + f"{indent}}}"
    if ty == "string":
        e = g(schema, "enum")
        if isinstance(e, list):
            names = [f'"{x}"' for x in e if isinstance(x, str)]
            if names:
                return " | ".join(names)
        return "string"
    if ty in ("number", "integer"):
        return "number"
    if ty == "boolean":
        return "boolean"
    if ty == "array":
        return ts(schema["items"], indent) + "[]" if "items" in schema else "Array<any>"
    return "any"

def tools_section(tools):
    sec = ["## functions\n", "namespace functions {\n"]
    for t in tools:
        for l in rust_lines(t["description"]):
            sec.append(f"// {l}")
        if t["parameters"] is not None:
            sec.append(f"type {t['name']} = (_: {ts(t['parameters'], '')}) => any;\n")
        else:
            sec.append(f"type {t['name']} = () => any;\n")
    sec.append("} // namespace functions")
    return "\n\n".join(["# Tools", "\n".join(sec)])

class Reject(Exception): pass
class Unsup(Exception): pass

def M(role, content, **kw):
    d = {"role": role, "content": content if isinstance(content, list) else [content]}
    d.update(kw)
    return d

def flatten(content):
    if isinstance(content, list):
        parts = [i.get("text", "") for i in content if isinstance(i, dict) and i.get("type") == "text"]
        if not all(isinstance(p, str) for p in parts): raise Unsup()
        return "".join(parts)
    if content is not None and not isinstance(content, str): raise Unsup()
    return content

def s(v):
    if not isinstance(v, str): raise Unsup()
    return v

def one(msg, names):
    role = msg.get("role")
    out = []
    tcs = msg.get("tool_calls", [])
    if role == "assistant" and tcs:
        c = flatten(msg.get("content"))
        if c:
            out.append(M("assistant", c, channel="commentary"))
        r = msg.get("reasoning")
        if r:
            out.append(M("assistant", s(r), channel="analysis"))
        for call in tcs:
            f = call.get("function", {})
            name = f.get("name", "")
            args = f.get("arguments", "") or ""
            out.append(M("assistant", s(args), channel="commentary", recipient=f"functions.{name}", content_type="json"))
        return out
    if role == "tool":
        name = names.get(msg.get("tool_call_id", ""), "")
        c = flatten(msg.get("content", "") or "")
        return [M("tool", c, name=f"functions.{name}", channel="commentary", recipient="assistant")]
    r = msg.get("reasoning")
    if role == "assistant" and r:
        out.append(M("assistant", s(r), channel="analysis"))
    c = msg.get("content") or ""
    if isinstance(c, str):
        contents = [c]
    elif isinstance(c, list):
        contents = [s(p.get("text", "")) for p in c]
    else:
        raise Unsup()
    if role == "assistant" and contents and contents[0]:
        out.append(M("assistant", contents, channel="final"))
    elif role != "assistant":
        if role not in ("system", "developer", "user"): raise Unsup()
        out.append(M(role, contents))
    return out

def convert(msgs):
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls", []):
            names[tc.get("id")] = tc.get("function", {}).get("name")
    out = []
    for m in msgs:
        out.extend(one(m, names))
    last = -1
    for i in range(len(out) - 1, -1, -1):
        if out[i]["role"] == "assistant" and out[i].get("channel") == "final":
            last = i
            break
    return [m for i, m in enumerate(out) if not (i < last and m.get("channel") == "analysis")]

DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."

def check_effort(eff):
    if eff is not None and eff not in ("high", "medium", "low"): raise Reject()
    return eff or "medium"

def render(req, date):
    eff = req.get("reasoning_effort")
    if eff == "none": raise Reject()
    eff = check_effort(eff)
    tools = req.get("tools")
    tc = req.get("tool_choice")
    # ChatCompletionRequest.check_tool_usage
    if tools == []: raise Reject()
    if tc is not None and tc != "none":
        if tools is None: raise Reject()
        if tc not in ("auto", "required"):
            if not isinstance(tc, dict): raise Reject()
            fn = tc.get("function")
            if not isinstance(fn, dict) or "name" not in fn: raise Reject()
            if not isinstance(fn["name"], str) or not fn["name"]: raise Reject()
            if not any(t["function"]["name"] == fn["name"] for t in tools): raise Reject()
    msgs = [M("system", {"sys": True, "identity": DEFAULT_IDENTITY, "effort": eff})]
    if tools:
        ftools = []
        for t in tools:
            fn = t["function"]
            if not isinstance(fn.get("description"), str): raise Reject()
            ftools.append({"name": fn["name"], "description": fn["description"], "parameters": fn.get("parameters")})
        msgs.append(M("developer", {"dev": ftools}))
    msgs += convert(req["messages"])
    return encode(msgs, date)

def responses_convert(req, sys_instr):
    """ResponsesRequest's validators, then _construct_input_messages_with_harmony."""
    if req.get("previous_response_id") is not None or req.get("previous_input_messages") is not None:
        raise Unsup()
    if req.get("prompt") is not None: raise Reject()
    inc = req.get("include")
    if isinstance(inc, list) and "message.output_text.logprobs" in inc: raise Reject()
    tools = req.get("tools", [])
    if not isinstance(tools, list): raise Reject()
    tc = req.get("tool_choice", "auto")
    if tc not in ("auto", "none"): raise Reject()
    instructions = req.get("instructions")
    if instructions is not None and not isinstance(instructions, str): raise Reject()
    reasoning = req.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, dict): raise Reject()
    eff = check_effort((reasoning or {}).get("effort"))
    inp = req.get("input")
    if not isinstance(inp, (str, list)): raise Reject()
    types = set()
    for t in tools:
        if not isinstance(t, dict): raise Reject()
        if t.get("type") in ("web_search_preview", "code_interpreter", "container", "mcp"): raise Unsup()
        types.add(t.get("type"))
    custom = bool(types)
    if custom and types != {"function"}: raise Reject()
    identity = None
    if isinstance(inp, list):
        for item in inp:
            if isinstance(item, dict) and item.get("role") == "system":
                c = item.get("content")
                if isinstance(c, str):
                    identity = c
                elif isinstance(c, list):
                    for p in c:
                        if isinstance(p, dict) and p.get("type") == "input_text":
                            identity = p.get("text")
                            break
                break
    if identity is not None and not isinstance(identity, str): raise Unsup()
    if identity is None: identity = DEFAULT_IDENTITY
    if instructions is not None and sys_instr:
        identity = f"{identity}\n{instructions}" if identity else instructions
    msgs = [M("system", {"sys": True, "identity": identity, "effort": eff})]
    if custom:
        ftools = []
        for t in tools:
            if not isinstance(t.get("name"), str): raise Unsup()
            if not isinstance(t.get("description"), str): raise Reject()
            ftools.append({"name": t["name"], "description": t["description"], "parameters": t.get("parameters")})
        msgs.append(M("developer", {"dev": ftools, "instructions": None if sys_instr else instructions}))
    if isinstance(inp, str):
        msgs.append(M("user", inp))
        return msgs
    prev_calls = []
    for item in inp:
        m = response_item(item, prev_calls)
        if m is not None and m["role"] != "system":
            msgs.append(m)
        if isinstance(item, dict) and item.get("type") == "function_call":
            prev_calls.append(item)
    return msgs

def text_of(p):
    # Parts without "text" (images, files, refusals) raise KeyError in vLLM.
    if not isinstance(p, dict) or "text" not in p: raise Unsup()
    return s(p["text"])

def response_item(item, prev_calls):
    if not isinstance(item, dict): raise Unsup()
    if "type" not in item or item["type"] == "message":
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"): raise Unsup()
        c = item.get("content")
        pre = "Instructions:\n" if role == "developer" else ""
        if isinstance(c, str):
            contents = [pre + c]
        elif isinstance(c, list):
            contents = [pre + text_of(p) for p in c]
        else:
            raise Unsup()
        return M(role, contents, channel="final") if role == "assistant" else M(role, contents)
    t = item["type"]
    if t == "function_call_output":
        found = None
        for call in reversed(prev_calls):
            if call.get("call_id") == item.get("call_id"):
                found = call
                break
        if found is None: raise Reject()
        return M("tool", s(item.get("output")), name=f"functions.{found['name']}", channel="commentary", recipient="assistant")
    if t == "reasoning":
        if not isinstance(item.get("summary"), list): raise Unsup()
        c = item.get("content")
        if c and len(c) >= 1:
            return M("assistant", "\n".join(text_of(p) for p in c), channel="analysis")
        return None
    if t == "function_call":
        for k in ("name", "arguments", "call_id"): s(item.get(k))
        return M("assistant", item["arguments"], channel="commentary", recipient=f"functions.{item['name']}", content_type="json")
    raise Reject()

def encode(msgs, date):
    has_ft = any(isinstance(c, dict) and c.get("dev") for m in msgs for c in m["content"])
    last_asst = [m for m in msgs if m["role"] == "assistant"]
    drop = bool(last_asst) and last_asst[-1].get("channel") == "final"
    ff = next((i for i, m in enumerate(msgs) if m.get("channel") == "final"), None)
    out = []
    T = lambda t: out.append(["T", t])
    X = lambda t: out.append(["X", t])
    for i, m in enumerate(msgs):
        if drop and ff is not None and i < ff and m.get("channel") == "analysis":
            continue
        T("<|start|>")
        X(m["name"] if m["role"] == "tool" else m["role"])
        if m.get("recipient") and m["recipient"] != "all":
            X(f" to={m['recipient']}")
        if m.get("channel") is not None:
            T("<|channel|>"); X(m["channel"])
        if m.get("content_type") is not None:
            X(f" {m['content_type']}")
        T("<|message|>")
        for c in m["content"]:
            if isinstance(c, dict) and "sys" in c:
                ch = "# Valid channels: analysis, commentary, final. Channel must be included for every message."
                if has_ft:
                    ch += "\nCalls to these tools must go to the commentary channel: 'functions'."
                X("\n\n".join([f"{c['identity']}\nKnowledge cutoff: 2024-06\nCurrent date: {date}", f"Reasoning: {c['effort']}", ch]))
            elif isinstance(c, dict) and "dev" in c:
                sec = []
                if c.get("instructions") is not None:
                    sec += ["# Instructions", c["instructions"]]
                if c["dev"]:
                    sec.append(tools_section(c["dev"]))
                X("\n\n".join(sec))
            else:
                X(c)
        T("<|call|>" if m["role"] == "assistant" and m.get("recipient") is not None else "<|end|>")
    T("<|start|>"); X("assistant")
    return out

for line in sys.stdin:
    case = json.loads(line)
    try:
        if "responses" in case:
            msgs = responses_convert(case["responses"], case.get("system_instructions", False))
            print(json.dumps(encode(msgs, case["date"])))
        else:
            print(json.dumps(render(case["request"], case["date"])))
    except Reject:
        print(json.dumps({"error": "rejected"}))
    except (Unsup, TypeError, AttributeError, KeyError):
        print(json.dumps({"error": "unsupported"}))
