"""Drives exec_command / write_stdin sessions of `cheng serve --stdio` with the official MCP Python
SDK client (`mcp.Client`), approving every card through elicitation and recording it.

Usage: sessions.py CHENG WORKSPACE CHECK [MODE]
Every check raises AssertionError with a sentence on failure; success prints "ok CHECK".
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, CHECK = sys.argv[1], sys.argv[2], sys.argv[3]
# The connection mode ("legacy": approvals asked mid-call; "2026-07-28": input_required rounds).
MODE = sys.argv[4] if len(sys.argv) > 4 else "legacy"
# Durations no other process on the machine uses, to find our sleeps.
TAG = f"{os.getpid() % 1000}"
CARDS = []


def params(*extra):
    return StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, *extra])


async def accept(_ctx, p):
    CARDS.append(p.message)
    return types.ElicitResult(action="accept", content={})


async def decline(_ctx, p):
    CARDS.append(p.message)
    return types.ElicitResult(action="decline")


def client(callback=accept):
    return Client(params(), mode=MODE, elicitation_callback=callback)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def call(c, tool, args):
    result = await c.call_tool(tool, args)
    out = result.structured_content or {}
    return result, out


def procs(argv0, arg):
    """Pids whose argv[0] ends with argv0 and whose argv contains arg."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "Z":
            continue
        if argv and argv[0].endswith(argv0.encode()) and arg.encode() in argv[1:]:
            found.append(int(pid))
    return found


def wait_until(what, predicate, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {seconds} s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_pid():
    """The `cheng serve` this process started (its child)."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and b"serve" in argv:
            return int(pid)
    raise AssertionError("cannot find the cheng serve process")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def http_server():
    port = free_port()
    with open(os.path.join(WORKSPACE, f"page-{TAG}.txt"), "w") as f:
        f.write("served by the session\n")
    async with client() as c:
        result, out = await call(c, "exec_command", {
            "command": "python3", "args": ["-u", "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            "yield_time_ms": 1500, "purpose": "serve the workspace"})
        assert not result.is_error, f"the server did not start: {text(result)}"
        assert out["running"] is True and isinstance(out["session_id"], int), f"no running session: {out}"
        sid = out["session_id"]
        assert "Serving HTTP" in out["output"], f"the server's banner is missing: {out['output']!r}"
        assert f"Process running with session ID {sid}" in out["summary"], out["summary"]
        assert any("python3 -u -m http.server" in card for card in CARDS), f"no approval card names the server: {CARDS}"
        # The same connection's workspace_shell reaches it.
        result, got = await call(c, "workspace_shell", {"command": "curl", "args": ["-s", f"http://127.0.0.1:{port}/page-{TAG}.txt"]})
        assert not result.is_error, f"curl failed: {text(result)}"
        assert got["stdout"] == "served by the session\n", f"curl got {got['stdout']!r}"
        # The request shows up in the server's log (stderr, interleaved).
        result, out = await call(c, "write_stdin", {"session_id": sid, "chars": "", "yield_time_ms": 250})
        assert f"GET /page-{TAG}.txt" in out["output"], f"the request log is missing: {out}"
        # Interrupt it: SIGINT to its process group.
        result, out = await call(c, "write_stdin", {"session_id": sid, "chars": "\u0003", "yield_time_ms": 5000})
        assert out["running"] is False and out["session_id"] is None, f"the interrupted server still runs: {out}"
        assert out["termination"] in ("signalled", "exited"), out
        assert "Keyboard interrupt received" in out["output"], f"not interrupted: {out}"
        # The port is free again and the id is gone, with a reason.
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, "the server still accepts connections"
        result, out = await call(c, "write_stdin", {"session_id": sid, "chars": ""})
        assert result.is_error and "has ended" in text(result), f"an ended session answered: {text(result)}"
        assert out["error_kind"] == "LOCAL_EXECUTOR_NOT_FOUND", out


async def cat_session():
    async with client() as c:
        _, out = await call(c, "exec_command", {"command": "cat", "yield_time_ms": 250})
        sid = out["session_id"]
        assert out["running"] and out["output"] == "", out
        for line in ("hello\n", "second line\n"):
            _, got = await call(c, "write_stdin", {"session_id": sid, "chars": line, "yield_time_ms": 500})
            assert got["output"] == line, f"cat echoed {got['output']!r} for {line!r}"
            assert got["running"] is True and got["session_id"] == sid
        # The line break is shown ANSI-C quoted, as a shell would read it, never raw on the card.
        assert any(f"write $'hello\\n' to session {sid} (cat)" in card for card in CARDS), f"no card for the write: {CARDS}"
        writes = [card for card in CARDS if f"to session {sid}" in card]
        assert len(writes) == 2, f"not one card per write (a card drawn before the call must match the run's): {writes}"


async def repl():
    async with client() as c:
        _, out = await call(c, "exec_command", {"command": "python3", "args": ["-i", "-q", "-u"], "yield_time_ms": 1000})
        sid = out["session_id"]
        assert out["running"], out
        _, got = await call(c, "write_stdin", {"session_id": sid, "chars": "x = 41\n", "yield_time_ms": 500})
        _, got = await call(c, "write_stdin", {"session_id": sid, "chars": "print(x + 1)\n", "yield_time_ms": 500})
        assert "42" in got["output"], f"the REPL lost its state: {got['output']!r}"
        _, got = await call(c, "write_stdin", {"session_id": sid, "chars": "import sys; sys.exit(3)\n", "yield_time_ms": 5000})
        assert got["running"] is False and got["exit_code"] == 3, f"the REPL did not exit 3: {got}"
        assert "Process exited with code 3" in got["summary"], got["summary"]
        assert got["error_kind"] == "LOCAL_EXECUTOR_NON_ZERO_EXIT", got


async def yield_clamping():
    async with client() as c:
        arg = f"7.{TAG}1"
        start = time.monotonic()
        _, out = await call(c, "exec_command", {"command": "sleep", "args": [arg], "yield_time_ms": 1})
        took = time.monotonic() - start
        assert out["yield_time_ms"] == 250 and out["running"], f"a 1 ms yield was not raised to 250 ms: {out}"
        assert out["wall_time_ms"] >= 250 and took >= 0.25, f"returned before 250 ms: {out}"
        _, out = await call(c, "exec_command", {"command": "sleep", "args": ["0.3"], "yield_time_ms": 600000})
        assert out["yield_time_ms"] == 30000, f"a 600 s yield was not cut to 30 s: {out}"
        assert out["running"] is False and out["exit_code"] == 0, f"the exit did not end the wait: {out}"


async def poll_floor():
    async with client() as c:
        _, out = await call(c, "exec_command", {"command": "sleep", "args": [f"9.{TAG}2"], "yield_time_ms": 250})
        sid = out["session_id"]
        start = time.monotonic()
        _, got = await call(c, "write_stdin", {"session_id": sid, "chars": "", "yield_time_ms": 250})
        took = time.monotonic() - start
        assert got["yield_time_ms"] == 5000, got
        assert got["wall_time_ms"] >= 5000 and took >= 5.0, f"an empty poll returned after {took:.2f} s: {got}"
        assert got["running"] is True
        # Output ends a poll early.
        script = "import time; time.sleep(1); print('late', flush=True); time.sleep(30)"
        _, out = await call(c, "exec_command", {"command": "python3", "args": ["-c", script], "yield_time_ms": 250})
        start = time.monotonic()
        _, got = await call(c, "write_stdin", {"session_id": out["session_id"], "chars": "", "yield_time_ms": 20000})
        took = time.monotonic() - start
        assert got["output"] == "late\n", got
        assert took < 10, f"the poll did not return when output arrived ({took:.2f} s)"


async def eviction():
    marker = f"3.{TAG}3"
    async with client() as c:
        ids = []
        for i in range(64):
            args = {"command": "sleep", "args": [marker], "yield_time_ms": 250} if i == 2 else {"command": "cat", "yield_time_ms": 250}
            _, out = await call(c, "exec_command", args)
            assert out["running"], f"session {i} is not running: {out}"
            ids.append(out["session_id"])
        assert len(set(ids)) == 64
        assert not procs("sleep", marker), "session 3's sleep should have ended by now"
        cats = {sid: None for sid in ids}
        # Session 1 is used again: it is now among the 8 most recent.
        _, got = await call(c, "write_stdin", {"session_id": ids[0], "chars": "x\n", "yield_time_ms": 250})
        assert got["output"] == "x\n", got
        # Full: the ended session (3) goes first, although older ones exist.
        _, out = await call(c, "exec_command", {"command": "cat", "yield_time_ms": 250})
        assert f"session {ids[2]} was evicted" in out["summary"], out["summary"]
        # Then the least recently used that is not protected: 2 (1 was used).
        _, out = await call(c, "exec_command", {"command": "cat", "yield_time_ms": 250})
        assert f"session {ids[1]} was evicted" in out["summary"], out["summary"]
        for sid, why in ((ids[2], "evicted"), (ids[1], "evicted")):
            result, got = await call(c, "write_stdin", {"session_id": sid, "chars": "y\n"})
            assert result.is_error and why in text(result), f"session {sid}: {text(result)}"
            assert got["error_kind"] == "LOCAL_EXECUTOR_NOT_FOUND"
        _, got = await call(c, "write_stdin", {"session_id": ids[0], "chars": "still\n", "yield_time_ms": 250})
        assert got["output"] == "still\n", f"protected session 1 was evicted: {got}"
        result, _ = await call(c, "write_stdin", {"session_id": 999, "chars": ""})
        assert result.is_error and "unknown" in text(result), text(result)
        assert len(cats) == 64


async def killed_on_exit():
    """Client exits (stdin EOF): every session's process group, and what escaped it, dies."""
    plain, escaped = f"31.{TAG}4", f"32.{TAG}5"
    script = f"import subprocess, time; subprocess.Popen(['setsid', 'sleep', '{escaped}']); time.sleep(300)"
    before = (len(procs("sleep", plain)), len(procs("sleep", escaped)))
    assert before == (0, 0), f"leftovers before the test: {before}"
    async with client() as c:
        _, out = await call(c, "exec_command", {"command": "sleep", "args": [plain], "yield_time_ms": 250})
        assert out["running"], out
        _, out = await call(c, "exec_command", {"command": "python3", "args": ["-c", script], "yield_time_ms": 1000})
        assert out["running"], out
        wait_until("both sleeps to start", lambda: procs("sleep", plain) and procs("sleep", escaped))
        during = (len(procs("sleep", plain)), len(procs("sleep", escaped)))
        assert during == (1, 1), during
    wait_until("every session process to die after the client left", lambda: not procs("sleep", plain) and not procs("sleep", escaped))


async def killed_on_server_kill():
    """The server is killed outright (SIGKILL): its per-session reapers still kill everything."""
    plain = f"33.{TAG}6"
    proc = subprocess.Popen([CHENG, "serve", "--stdio", "--workspace", WORKSPACE, "--approve"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def answer(i):
        while True:
            line = proc.stdout.readline()
            assert line, "the server closed stdout"
            msg = json.loads(line)
            if msg.get("id") == i:
                return msg

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    answer(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "exec_command", "arguments": {
        "command": "sleep", "args": [plain], "yield_time_ms": 250}}})
    out = answer(1)["result"]["structuredContent"]
    assert out["running"], out
    assert len(procs("sleep", plain)) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_until("the session's sleep to die after the server was killed", lambda: not procs("sleep", plain))


async def flood():
    async with client() as c:
        _, out = await call(c, "exec_command", {"command": "yes", "args": ["flood"], "yield_time_ms": 1000, "max_output_tokens": 1000})
        sid = out["session_id"]
        assert out["running"] and out["output_truncated"], out
        assert len(out["output"]) < 4000 + 100, f"{len(out['output'])} chars returned for 1000 tokens"
        assert out["output_bytes"] > 100000, out["output_bytes"]
        assert "Original token count" in out["summary"] and "omitted" in out["summary"]
        pid = server_pid()
        first = rss_kib(pid)
        for _ in range(4):
            # A poll returns as soon as output is pending, so let the flood pile up between calls
            # (as it does while an agent works on something else) before taking it.
            await anyio.sleep(1)
            _, got = await call(c, "write_stdin", {"session_id": sid, "chars": "", "yield_time_ms": 250, "max_output_tokens": 1000})
            assert got["running"] and len(got["output"]) < 4100, len(got["output"])
            assert got["output_bytes"] > 100000, got["output_bytes"]
        last = rss_kib(pid)
        # The session keeps at most 1 MiB between calls, whatever `yes` writes (gigabytes here).
        assert last < first + 64 * 1024, f"the server grew from {first} KiB to {last} KiB while the session flooded"
        await call(c, "write_stdin", {"session_id": sid, "chars": "\u0003", "yield_time_ms": 2000})


async def cards():
    marker = f"declined-{TAG}"
    async with client(decline) as c:
        result, out = await call(c, "exec_command", {"command": "touch", "args": [marker], "purpose": "make a marker"})
        assert result.is_error and out["error_kind"] == "LOCAL_EXECUTOR_APPROVAL_DENIED", out
        assert not os.path.exists(os.path.join(WORKSPACE, marker)), "a declined start ran"
        assert len(CARDS) == 1 and f"touch {marker}" in CARDS[0] and "session" in CARDS[0], CARDS
    CARDS.clear()
    async with client() as c:
        for i in range(3):
            await call(c, "exec_command", {"command": "true", "args": [str(i)], "yield_time_ms": 250})
        assert len(CARDS) == 3 and all(f"true {i}" in CARDS[i] for i in range(3)), f"not one card per start: {CARDS}"


async def main():
    check = globals()[CHECK]
    await check()
    print(f"ok {CHECK} ({MODE})")


anyio.run(main)
