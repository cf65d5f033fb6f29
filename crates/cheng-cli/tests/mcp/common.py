"""What the MCP client scripts here share: elicitation answers, a result's text, and finding a
`sleep` of a given duration among the machine's processes. Imported by the scripts beside it
(python puts a script's own folder first on the import path)."""

import os
import time

import anyio
import mcp_types as types


async def accept(_ctx, _params):
    return types.ElicitResult(action="accept", content={})


async def decline(_ctx, _params):
    return types.ElicitResult(action="decline")


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def sleeps_alive(duration):
    """The pids of `sleep DURATION` processes (a duration no other process uses)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and argv[0].endswith(b"sleep") and argv[1] == duration.encode():
            found.append(int(pid))
    return found


async def cancel_a_running_sleep(client, duration):
    """Calls `workspace_shell sleep DURATION` through `client` (its elicitation callback must
    accept), cancels the call once the sleep runs, and checks that the sleep is gone within 1.5 s."""

    async def call():
        await client.call_tool("workspace_shell", {"command": "sleep", "args": [duration], "timeout_ms": 60000})
        raise AssertionError(f"sleep {duration} finished before the cancel")

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        deadline = time.monotonic() + 10
        while not sleeps_alive(duration) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        started = bool(sleeps_alive(duration))
        tg.cancel_scope.cancel()
    assert started, f"sleep {duration} never started"
    # The cancel went out as the call's scope ended; its process group must be gone soon after.
    deadline = time.monotonic() + 1.5
    while sleeps_alive(duration) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert not sleeps_alive(duration), f"sleep {duration} still running after the cancel: {sleeps_alive(duration)}"
