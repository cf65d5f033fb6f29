"""Drives the file nodes of `cheng serve --stdio` with the official MCP Python SDK client
(`mcp.Client`): read, then an edit approved (or declined) through elicitation, recording each card.

Usage: files.py CHENG WORKSPACE MODE
MODE: "legacy" (approvals asked mid-call) or "2026-07-28" (input_required rounds).
Raises AssertionError with a sentence on failure; success prints "ok files (MODE)".
"""

import os
import sys

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
CARDS = []


def client(action):
    async def answer(_ctx, p):
        CARDS.append(p.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    params = StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE])
    return Client(params, mode=MODE, elicitation_callback=answer)


async def call(c, tool, args):
    result = await c.call_tool(tool, args)
    return result, result.structured_content or {}


def content():
    with open(os.path.join(WORKSPACE, "notes.md"), encoding="utf-8") as f:
        return f.read()


async def main():
    with open(os.path.join(WORKSPACE, "notes.md"), "w", encoding="utf-8") as f:
        f.write("# Notes\n\nold line\n")
    # Declined: nothing changes, and the card showed the diff.
    async with client("decline") as c:
        _, out = await call(c, "read_file", {"file_path": "notes.md"})
        assert out.get("success") is True, out
        result, out = await call(c, "edit_file", {"file_path": "notes.md", "old": "old line", "new": "new line"})
        assert result.is_error and out["error_kind"] == "LOCAL_EXECUTOR_APPROVAL_DENIED", out
        assert content() == "# Notes\n\nold line\n", "a declined edit wrote"
        assert len(CARDS) == 1 and "-old line" in CARDS[0] and "+new line" in CARDS[0], f"the card shows no diff: {CARDS}"
    CARDS.clear()
    # Accepted: one card, the file edited, the new tag handed back.
    async with client("accept") as c:
        await call(c, "read_file", {"file_path": "notes.md"})
        result, out = await call(c, "edit_file", {"file_path": "notes.md", "old": "old line", "new": "new line"})
        assert not result.is_error and out.get("success") is True, out
        assert content() == "# Notes\n\nnew line\n", content()
        assert len(CARDS) == 1, f"one card per edit: {CARDS}"
        # A second edit in the same connection, without a new read: the edit's own tag counts.
        result, out = await call(c, "edit_file", {"file_path": "notes.md", "old": "new line", "new": "last line"})
        assert not result.is_error, out
    # A new connection has read nothing: the freshness gate refuses before any card.
    CARDS.clear()
    async with client("accept") as c:
        result, out = await call(c, "edit_file", {"file_path": "notes.md", "old": "last line", "new": "x"})
        assert result.is_error and "read" in out.get("error", ""), out
        assert content() == "# Notes\n\nlast line\n", content()
    print(f"ok files ({MODE})")


anyio.run(main)
