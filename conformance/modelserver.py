#!/usr/bin/env python3
"""A scripted model server for the real agents (SPEC 13), on 127.0.0.1 only.

It answers the streaming Anthropic Messages API (POST /v1/messages, for Claude Code),
the streaming OpenAI Responses API (POST /v1/responses, for Codex) and the Gemini API
(POST /v1beta/models/MODEL:streamGenerateContent?alt=sse and :generateContent, for the
Gemini CLI) from a script, and records every request body it gets, so a test can read
exactly what the agent sent.

The script is a JSON object:
  {"steps": [STEP, ...],          # answers to the agent's own turns, in order
   "compact": STEP,               # the answer to a compaction (summary) request
   "side": STEP}                  # the answer to anything else (titles, probes)
  STEP = {"text": "...", "tool": {"name": ..., "input": {...}}, "usage": {...}}
A step may hold a text, a tool call, or both (text first). usage is what the server
reports for that call, in the API's own keys: Anthropic `input_tokens`,
`cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens`; OpenAI
`input_tokens` (cached included), `cached_tokens`, `output_tokens`; Gemini
`promptTokenCount` (cached included), `cachedContentTokenCount`, `candidatesTokenCount`.

A request is a *compaction* when the agent asks for a summary of the conversation
(its last user text asks for one), *side* when it carries no tools, else a *step*.
When the steps run out, the server answers "Done." with the last step's usage.

Usage: modelserver.py --script FILE --record DIR --port-file FILE
The port is chosen by the kernel and written to --port-file once the server listens.
"""

import argparse
import http.server
import itertools
import json
import os
import sys
import threading
import uuid

COMPACT_MARKERS = (
    "create a detailed summary of the conversation",
    "summarize the conversation",
    "your task is to create a detailed summary",
    "context checkpoint compaction",
    "handoff summary",
)


class Script:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            script = json.load(f)
        self.steps = script.get("steps", [])
        self.compact = script.get("compact", {"text": "<summary>The work so far.</summary>", "usage": {}})
        self.side = script.get("side", {"text": "ok", "usage": {}})
        self.next = 0
        self.lock = threading.Lock()

    def step(self):
        with self.lock:
            if self.next < len(self.steps):
                s = self.steps[self.next]
                self.next += 1
                return self.next - 1, s
            last = self.steps[-1]["usage"] if self.steps else {}
            self.next += 1
            return self.next - 1, {"text": "Done.", "usage": last}


def texts(value):
    """Every string in a request value, for looking for a summary prompt."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from texts(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in ("text", "content", "input"):
                yield from texts(v)


def last_user_text(messages):
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == "user":
            return " ".join(texts(m.get("content"))).lower()
    return ""


def classify(body, api):
    if api == "gemini":
        # Gemini CLI's compressor sends its own system instruction (a <state_snapshot>),
        # twice: the summary, then a verification of it.
        system = " ".join(texts((body.get("systemInstruction") or {}).get("parts", [])))
        if "<state_snapshot>" in system:
            return "compact"
        return "step" if body.get("tools") else "side"
    messages = body.get("messages") if api == "anthropic" else body.get("input")
    text = last_user_text(messages)
    if any(k in text for k in COMPACT_MARKERS):
        return "compact"
    if not body.get("tools"):
        return "side"
    return "step"


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_events(n, model, step):
    u = step.get("usage", {})
    usage = {
        "input_tokens": u.get("input_tokens", 10),
        "cache_creation_input_tokens": u.get("cache_creation_input_tokens", 0),
        "cache_read_input_tokens": u.get("cache_read_input_tokens", 0),
        "output_tokens": 1,
    }
    msg = {"id": f"msg_scripted_{n}", "type": "message", "role": "assistant", "model": model,
           "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    out = [sse("message_start", {"type": "message_start", "message": msg})]
    index = 0
    if step.get("text"):
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": step["text"]}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = "end_turn"
    if step.get("tool"):
        t = step["tool"]
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "tool_use", "id": f"toolu_scripted_{n}",
                                                                 "name": t["name"], "input": {}}}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": json.dumps(t.get("input", {}))}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        stop = "tool_use"
    final = dict(usage, output_tokens=u.get("output_tokens", 5))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": final}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def openai_events(n, model, step):
    u = step.get("usage", {})
    items = []
    if step.get("text"):
        items.append({"type": "message", "id": f"msg_scripted_{n}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": step["text"], "annotations": []}]})
    if step.get("tool"):
        t = step["tool"]
        if t.get("custom"):
            # A freeform tool (Codex's `apply_patch` for models that have it): raw text in.
            items.append({"type": "custom_tool_call", "id": f"ctc_scripted_{n}", "call_id": f"call_scripted_{n}",
                          "name": t["name"], "input": t["input"], "status": "completed"})
        else:
            items.append({"type": "function_call", "id": f"fc_scripted_{n}", "call_id": f"call_scripted_{n}",
                          "name": t["name"], "arguments": json.dumps(t.get("input", {})), "status": "completed"})
    inp, cached, outp = u.get("input_tokens", 10), u.get("cached_tokens", 0), u.get("output_tokens", 5)
    usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
             "output_tokens": outp, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": inp + outp}
    resp = {"id": f"resp_scripted_{n}", "object": "response", "model": model, "status": "in_progress", "output": []}
    out = [sse("response.created", {"type": "response.created", "response": resp})]
    for i, item in enumerate(items):
        out.append(sse("response.output_item.added", {"type": "response.output_item.added", "output_index": i, "item": item}))
        out.append(sse("response.output_item.done", {"type": "response.output_item.done", "output_index": i, "item": item}))
    done = dict(resp, status="completed", output=items, usage=usage)
    out.append(sse("response.completed", {"type": "response.completed", "response": done}))
    return b"".join(out)


def gemini_response(n, model, step):
    """One GenerateContentResponse: the step's text and call, its usage figures."""
    u = step.get("usage", {})
    parts = []
    if step.get("text"):
        parts.append({"text": step["text"]})
    if step.get("tool"):
        t = step["tool"]
        parts.append({"functionCall": {"name": t["name"], "args": t.get("input", {})}})
    prompt, cached, out = u.get("promptTokenCount", 10), u.get("cachedContentTokenCount", 0), u.get("candidatesTokenCount", 5)
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}
    if cached:
        usage["cachedContentTokenCount"] = cached
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, "modelVersion": model, "responseId": f"resp_scripted_{n}"}


def gemini_events(n, model, step):
    return b"data: " + json.dumps(gemini_response(n, model, step)).encode() + b"\r\n\r\n"


def make_handler(script, record):
    counter = itertools.count()
    # Ids unique across servers: an agent resumed against a new server must never get
    # a message id it already holds (Claude Code joins records that share one).
    run = uuid.uuid4().hex[:8]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, ctype, body):
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self.reply(200, "application/json", b'{"object":"list","data":[],"models":[]}')
            else:
                self.reply(404, "application/json", b'{"error":"not scripted"}')

        def do_HEAD(self):
            self.reply(200, "text/plain", b"")

        def do_POST(self):
            n = next(counter)
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            path = self.path.split("?")[0]
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            if path.endswith("/messages/count_tokens"):
                self.reply(200, "application/json", b'{"input_tokens": 10}')
                return
            if path.endswith(":countTokens"):
                self.reply(200, "application/json", b'{"totalTokens": 10}')
                return
            if ":streamGenerateContent" in path or ":generateContent" in path:
                api = "gemini"
            elif path.endswith("/messages"):
                api = "anthropic"
            elif path.endswith("/responses"):
                api = "openai"
            else:
                self.reply(404, "application/json", b'{"error":"not scripted"}')
                return
            kind = classify(body, api)
            if kind == "step":
                index, step = script.step()
            else:
                index, step = None, script.compact if kind == "compact" else script.side
            with open(os.path.join(record, f"{n:04d}-{api}-{kind}.json"), "w", encoding="utf-8") as f:
                json.dump({"path": path, "kind": kind, "step": index, "body": body}, f)
            model = body.get("model", "scripted")
            if api == "gemini":
                model = path.rsplit("/", 1)[-1].split(":")[0]
                if ":generateContent" in path:
                    body = json.dumps(gemini_response(f"{run}_{n}", model, step)).encode()
                    self.reply(200, "application/json", body)
                    return
                self.reply(200, "text/event-stream", gemini_events(f"{run}_{n}", model, step))
                return
            events = anthropic_events if api == "anthropic" else openai_events
            self.reply(200, "text/event-stream", events(f"{run}_{n}", model, step))

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--script", required=True)
    p.add_argument("--record", required=True)
    p.add_argument("--port-file", required=True)
    a = p.parse_args()
    os.makedirs(a.record, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(Script(a.script), a.record))
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
