"""A scripted model on 127.0.0.1 that speaks the four wire formats the agents use.

Anthropic Messages (Claude Code), OpenAI Responses (Codex), OpenAI chat completions (Kimi Code)
and the Gemini API (Gemini CLI). This is a stand-in for the model (no model runs here); the
agents, their MCP clients and filegate are all real. Turn by turn it asks for the next call of
its script, naming the tool as the agent listed it (``mcp__filegate__ReadFile``,
``filegate__ReadFile`` …), and records every request, so a test asserts on the tool results
**the model received**. The position of a result in the conversation says which step it
answers: the model asks for one call per turn.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One call of the script. ``args`` may be a function of the results the model has received
    so far (by step), for a call that uses one: an UndoWrite of the id a write's message ended with."""

    tool: str  # filegate's name: ReadFile, Glob, …
    args: dict[str, Any] | Callable[[list[Seen]], dict[str, Any]]

    def arguments(self, received: list[Seen]) -> dict[str, Any]:
        return self.args(received) if callable(self.args) else self.args


@dataclass
class Seen:
    """One tool result as the model received it: its text and its images (decoded bytes)."""

    text: str = ""
    images: list[bytes] = field(default_factory=list)
    # The result came marked as a failed call: Claude Code's is_error, Gemini CLI's "error" in
    # place of "output", Kimi CLI's and Kimi Code's ERROR line. Codex sends no marker
    # (responses_state): for Codex this stays False, and a test of a failure reads the text.
    error: bool = False


@dataclass
class Recorder:
    steps: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)  # (path, body) of every request
    raw: list[bytes] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)  # the tools of the last main request
    results: list[Seen] = field(default_factory=list)  # by step, from the latest main request
    finished: bool = False

    def all_bytes(self) -> bytes:
        return b"\n".join(self.raw)


def _tool_name(names: list[str], short: str) -> str | None:
    """The agent's name for filegate's ``short`` tool: one naming the server, else the bare name."""
    ours = [n for n in names if "filegate" in n and re.search(rf"(^|[^A-Za-z]){short}$", n)]
    if ours:
        return ours[0]
    return short if short in names else None


def _b64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=False)
    except ValueError:
        return b""


def collect(value: Any, seen: Seen) -> None:
    """Text and images anywhere in one result's payload (each format nests them differently)."""
    if isinstance(value, str):
        m = re.match(r"data:image/[\w.+-]+;base64,(.*)", value, re.S)
        if m:
            seen.images.append(_b64(m.group(1)))
        else:
            seen.text += value + "\n"
    elif isinstance(value, list):
        for v in value:
            collect(v, seen)
    elif isinstance(value, dict):
        # An image block: Anthropic {source:{data}}, Gemini {inlineData:{mimeType,data}},
        # Responses {type:input_image,image_url}, chat {image_url:{url}}.
        mime = value.get("media_type") or value.get("mimeType") or value.get("mime_type") or ""
        if isinstance(value.get("data"), str) and str(mime).startswith("image/"):
            seen.images.append(_b64(value["data"]))
            return
        for k, v in value.items():
            if k in ("type", "media_type", "mimeType", "mime_type", "tool_use_id", "call_id",
                     "tool_call_id", "id", "name", "role"):  # fmt: skip
                continue
            collect(v, seen)


# --- the four formats: tools listed, results so far, and the next turn ----------------------


def anthropic_state(body: dict[str, Any]) -> tuple[list[str], list[Seen]]:
    names = [t.get("name", "") for t in body.get("tools") or []]
    results = []
    for msg in body.get("messages", []):
        if msg.get("role") != "user" or not isinstance(msg.get("content"), list):
            continue
        for block in msg["content"]:
            if block.get("type") == "tool_result":
                seen = Seen(error=bool(block.get("is_error")))
                collect(block.get("content"), seen)
                results.append(seen)
            elif block.get("type") == "image" and results:
                collect(block, results[-1])  # an image sent beside the result
    return names, results


def _responses_names(tools: list[dict[str, Any]], prefix: str = "") -> list[str]:
    names = []
    for t in tools:
        if t.get("type") == "namespace":  # Codex groups a server's tools: mcp__filegate + ReadFile
            names += _responses_names(t.get("tools") or [], prefix + t.get("name", "") + NAMESPACE)
        else:
            names.append(prefix + (t.get("name") or (t.get("function") or {}).get("name", "")))
    return names


def _all_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if item.get("type") == "tool_search_output":
            found += item.get("tools") or []
    return found


def responses_state(body: dict[str, Any]) -> tuple[list[str], list[Seen]]:
    """Codex's conversation. Its ``function_call_output`` for an MCP call carries no error
    marker: Codex 0.169 records a failed call (``isError: true``) as ``status: "failed"`` in its
    own session log, but sends the model the same item as for a success (``type``, ``id``,
    ``call_id``, and ``output``: a "Wall time: …\\nOutput:" text part, then the result's
    blocks), so ``Seen.error`` stays False and only the text says the call failed."""
    names = _responses_names(body.get("tools") or [])
    if any(t.get("type") == "tool_search" for t in body.get("tools") or []):
        names.append(TOOL_SEARCH)
    results: list[Seen] = []
    for item in body.get("input") or []:
        if item.get("type") == "tool_search_output":
            names += _responses_names(item.get("tools") or [])
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            seen = Seen()
            collect(item.get("output"), seen)
            results.append(seen)
        elif item.get("type") == "message" and item.get("role") == "user" and results:
            for part in item.get("content") or []:
                if part.get("type") == "input_image":
                    collect(part.get("image_url"), results[-1])
    return names, results


def chat_state(body: dict[str, Any]) -> tuple[list[str], list[Seen]]:
    names = [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]
    results: list[Seen] = []
    for msg in body.get("messages") or []:
        if msg.get("role") == "tool":
            seen = Seen()
            collect(msg.get("content"), seen)
            seen.error = KIMI_ERROR in seen.text
            results.append(seen)
        elif msg.get("role") == "user" and results and isinstance(msg.get("content"), list):
            for part in msg["content"]:
                if part.get("type") == "image_url":
                    collect(part.get("image_url"), results[-1])
    return names, results


def gemini_state(body: dict[str, Any]) -> tuple[list[str], list[Seen]]:
    names = [d.get("name", "") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    results: list[Seen] = []
    for content in body.get("contents") or []:
        if content.get("role") != "user":
            continue
        for part in content.get("parts") or []:
            if "functionResponse" in part:
                # A failed call's response holds "error" (the result's text inside it) where a
                # success holds "output".
                seen = Seen(error="error" in (part["functionResponse"].get("response") or {}))
                collect(part["functionResponse"].get("response"), seen)
                collect(part["functionResponse"].get("parts"), seen)
                results.append(seen)
            elif "inlineData" in part and results:
                collect(part, results[-1])
            elif "text" in part and results and content is not body["contents"][0]:
                # Gemini CLI may send a result's extra text as a sibling part.
                results[-1].text += part["text"] + "\n"
    return names, results


# How Kimi CLI and Kimi Code begin a failed call's result (KIMI-REFERENCE).
KIMI_ERROR = "<system>ERROR:"
# Codex defers MCP tools behind a client-side tool search: the model searches first.
TOOL_SEARCH = "<tool_search>"
NAMESPACE = "__"  # a namespaced tool's name here; sent back as {"namespace": …, "name": …}


class Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the test prints what matters
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _sse(self, events: list[tuple[str | None, Any]]) -> None:
        out = []
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
        self._send(200, "".join(out).encode(), "text/event-stream")

    def do_GET(self) -> None:
        if "/models" in self.path:  # model lists (Codex, Kimi Code)
            self._send(200, json.dumps({"object": "list", "data": [], "models": []}).encode())
        else:
            self._send(404, b"{}")

    def do_HEAD(self) -> None:
        self._send(200, b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.headers.get("Content-Encoding") == "zstd":
            raise NotImplementedError("zstd request bodies")
        rec = self.server.recorder
        with self.server.lock:
            rec.raw.append(raw)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            rec.requests.append({"path": self.path, "body": body})
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            return self._send(200, b'{"input_tokens": 10}')
        if path.endswith("/messages"):
            return self.reply_anthropic(body)
        if path.endswith("/responses"):
            return self.reply_responses(body)
        if path.endswith("/chat/completions"):
            return self.reply_chat(body)
        if ":generateContent" in path or ":streamGenerateContent" in path:
            return self.reply_gemini(body, stream=":stream" in path)
        if ":countTokens" in path:
            return self._send(200, b'{"totalTokens": 10}')
        self._send(404, b'{"error": "not scripted"}')

    def next_call(self, names: list[str], results: list[Seen]) -> tuple[str, str, dict[str, Any]] | None:
        """The call for this turn (id, the agent's tool name, args), or None: say "done"."""
        rec = self.server.recorder
        if _tool_name(names, rec.steps[0].tool) is None:
            return None  # a side request (a title, a summary): not the conversation
        with self.server.lock:
            rec.tool_names = names
            if len(results) >= len(rec.results):
                rec.results = results
        if len(results) >= len(rec.steps):
            rec.finished = True
            return None
        step = rec.steps[len(results)]
        name = _tool_name(names, step.tool)
        if name is None:
            raise AssertionError(f"the agent lists no tool for {step.tool}: {names}")
        return f"call_{len(results)}_{uuid.uuid4().hex[:8]}", name, step.arguments(results)

    def reply_anthropic(self, body: dict[str, Any]) -> None:
        call = self.next_call(*anthropic_state(body))
        msg_id = "msg_" + uuid.uuid4().hex[:12]
        usage = {"input_tokens": 10, "output_tokens": 1}
        if call:
            block: dict[str, Any] = {"type": "tool_use", "id": call[0], "name": call[1], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call[2])}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": "done"}
            stop = "end_turn"
        if not body.get("stream"):
            full = dict(block, input=call[2]) if call else {"type": "text", "text": "done"}
            msg = {"id": msg_id, "type": "message", "role": "assistant", "model": body.get("model"),
                   "content": [full], "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip
            return self._send(200, json.dumps(msg).encode())
        start: dict[str, Any] = {"id": msg_id, "type": "message", "role": "assistant",
                                 "model": body.get("model"), "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
        self._sse([
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])  # fmt: skip

    def reply_responses(self, body: dict[str, Any]) -> None:
        names, results = responses_state(body)
        resp_id = "resp_" + uuid.uuid4().hex[:12]
        # Codex starts MCP servers beside the first turn: search until filegate's tools are found
        # (it lists them once connected), as a model would, a second apart; for all of them (its
        # default limit, 8, leaves one of filegate's nine behind).
        searches = [i for i in body.get("input") or [] if i.get("type") == "tool_search_output"]
        search = TOOL_SEARCH in names and _tool_name(names, self.server.recorder.steps[0].tool) is None
        if search and searches:
            if len(searches) >= 30:
                raise AssertionError("Codex's tool search never found filegate's tools")
            time.sleep(1)
        call = None if search else self.next_call(names, results)
        if search:
            item: dict[str, Any] = {"type": "tool_search_call", "id": "tsc_" + resp_id, "call_id": "ts_" + resp_id,
                                    "execution": "client", "arguments": {"query": "read a file", "limit": 20},
                                    "status": "completed"}  # fmt: skip
        elif call:
            item = {"type": "function_call", "id": "fc_" + call[0], "call_id": call[0],
                    "name": call[1], "arguments": json.dumps(call[2]), "status": "completed"}  # fmt: skip
            ns, sep, tool = call[1].rpartition(NAMESPACE)
            if sep and any(t.get("type") == "namespace" and t.get("name") == ns for t in _all_tools(body)):
                item |= {"namespace": ns, "name": tool}
        else:
            item = {"type": "message", "id": "msg_" + resp_id, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "done", "annotations": []}]}  # fmt: skip
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 11}  # fmt: skip
        response = {
            "id": resp_id,
            "object": "response",
            "status": "completed",
            "output": [item],
            "usage": usage,
        }
        self._sse([
            ("response.created", {"type": "response.created", "response": dict(response, status="in_progress", output=[])}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": response}),
        ])  # fmt: skip

    def reply_chat(self, body: dict[str, Any]) -> None:
        call = self.next_call(*chat_state(body))
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        if call:
            delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": call[0], "type": "function",
                 "function": {"name": call[1], "arguments": json.dumps(call[2])}}]}  # fmt: skip
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": "done"}
            finish = "stop"
        chunk = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                 "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip
        last = dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                    usage={"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11})  # fmt: skip
        if not body.get("stream"):
            message = {
                "role": "assistant",
                "content": delta.get("content"),
                "tool_calls": delta.get("tool_calls"),
            }
            full = {"id": cid, "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": last["usage"]}  # fmt: skip
            return self._send(200, json.dumps(full).encode())
        self._sse([(None, chunk), (None, last), (None, "[DONE]")])

    def reply_gemini(self, body: dict[str, Any], stream: bool) -> None:
        call = self.next_call(*gemini_state(body))
        if call:
            part: dict[str, Any] = {"functionCall": {"name": call[1], "args": call[2]}}
        elif (body.get("generationConfig") or {}).get("responseMimeType") == "application/json":
            # Gemini CLI's side questions (is the model done? which model?) want JSON back.
            part = {"text": json.dumps({"reasoning": "scripted", "next_speaker": "user",
                                        "model_choice": "flash", "complexity_score": 1})}  # fmt: skip
        else:
            part = {"text": "done"}
        reply = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}}  # fmt: skip
        if stream:
            self._sse([(None, reply)])
        else:
            self._send(200, json.dumps(reply).encode())


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.recorder = Recorder(steps)
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
