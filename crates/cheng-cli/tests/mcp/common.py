"""What the MCP client scripts here share: elicitation answers, a result's text, and finding a
`sleep` of a given duration among the machine's processes. Imported by the scripts beside it
(python puts a script's own folder first on the import path)."""

import os

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
