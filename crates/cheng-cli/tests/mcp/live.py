"""Live output and logging of `cheng serve --stdio`, driven by the official MCP Python SDK client.

Usage: live.py CHENG WORKSPACE MODE
MODE is "legacy", "2026-07-28" or "auto". Every check raises AssertionError with a sentence on
failure; success prints "ok <mode>: <checks>".
"""

import sys
import warnings

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
# Logging is deprecated by SEP-2577; clients still offer it and so does the server.
warnings.filterwarnings("ignore", message=".*logging.*deprecated")


def params(*extra):
    return StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, *extra])


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def progress_arrives_before_the_call_returns():
    """A line, a 1 s pause, another line: the first line reaches the client while the call runs."""
    seen = []  # in arrival order: ("progress", progress, message) and finally ("returned",)

    async def on_progress(progress, total, message):
        seen.append(("progress", progress, message))

    async with Client(params("--approve"), mode=MODE) as client:
        result = await client.call_tool(
            "workspace_shell",
            {"command": "sh", "args": ["-c", "echo first; sleep 1; echo second"]},
            progress_callback=on_progress,
        )
        seen.append(("returned",))
    assert not result.is_error, f"the call failed: {text(result)}"
    messages = [s[2] for s in seen if s[0] == "progress"]
    assert messages, f"no progress notification arrived: {seen}"
    assert messages[0] == "first\n", f"the first notification is not the first line alone: {seen}"
    first = next(i for i, s in enumerate(seen) if s[0] == "progress" and "first" in s[2])
    second = next((i for i, s in enumerate(seen) if s[0] == "progress" and "second" in s[2]), None)
    returned = seen.index(("returned",))
    assert first < returned, f"the first line arrived only after the call returned: {seen}"
    assert second is not None and first < second < returned, f"the lines arrived out of order or late: {seen}"
    assert "".join(messages) == "first\nsecond\n", f"the progress messages are not the output: {messages}"
    progress = [s[1] for s in seen if s[0] == "progress"]
    assert progress == sorted(progress) and len(set(progress)) == len(progress), f"progress must increase: {progress}"
    assert progress[-1] == len("first\nsecond\n"), f"progress is the bytes so far: {progress}"


async def warnings_as_log_messages():
    """The server's own warnings arrive as log messages, only after the client opted in."""
    logs = []

    async def on_log(params):
        logs.append(params)

    arguments = {"command": "touch", "args": ["never"]}
    async with Client(params(), mode=MODE, logging_callback=on_log) as client:
        stateless = (client.protocol_version or "") >= "2026-07-28"
        result = await client.call_tool("workspace_shell", arguments)
        assert result.is_error
        await anyio.sleep(0.2)
        assert not logs, f"log messages before the client opted in: {logs}"
        if not stateless:
            # Handshake era: logging/setLevel opts the connection in.
            await client.set_logging_level("warning")
            result = await client.call_tool("workspace_shell", arguments)
            assert result.is_error
            await anyio.sleep(0.2)
    if stateless:
        # Stateless era: the request opts in through `_meta` (the client's log_level stamps it).
        async with Client(params(), mode=MODE, logging_callback=on_log, log_level="warning") as client:
            result = await client.call_tool("workspace_shell", arguments)
            assert result.is_error
    assert logs, "the denial was not logged"
    assert all(str(l.level) in ("warning", "LoggingLevel.warning") or l.level == "warning" for l in logs), logs
    assert any("a person" in str(l.data).lower() for l in logs), f"the log does not say a person must allow it: {logs}"


async def main():
    done = []
    for check in (progress_arrives_before_the_call_returns, warnings_as_log_messages):
        await check()
        done.append(check.__name__)
    print(f"ok {MODE}: {', '.join(done)}")


anyio.run(main)
