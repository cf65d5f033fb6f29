"""Replays one accepted stateless-era approval against `cheng serve --stdio` with the official MCP
Python SDK client: the same requestState and inputResponses sent again, then to a restarted server.

Usage: replay.py CHENG WORKSPACE
Counts the runs in WORKSPACE/count.txt. Every check raises AssertionError with a sentence on
failure; success prints "ok replay: <what was seen>".
"""

import os
import sys

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE = sys.argv[1], sys.argv[2]
COUNT = os.path.join(WORKSPACE, "count.txt")
ARGUMENTS = {"command": "sh", "args": ["-c", "echo ran >> count.txt"], "purpose": "count runs"}
REPLAYS = 4


def params():
    return StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE])


async def accept(_ctx, _params):
    # Declares the elicitation capability; the stateless era's answers travel as inputResponses.
    return types.ElicitResult(action="accept", content={})


def runs():
    if not os.path.exists(COUNT):
        return 0
    with open(COUNT) as f:
        return f.read().count("ran")


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def call(client, state, responses):
    return await client.session.call_tool(
        "workspace_shell", ARGUMENTS, input_responses=responses, request_state=state, allow_input_required=True
    )


async def main():
    async with Client(params(), mode="2026-07-28", elicitation_callback=accept) as client:
        first = await client.session.call_tool("workspace_shell", ARGUMENTS, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), f"expected input_required, got {first}"
        responses = {k: types.ElicitResult(action="accept", content={}) for k in first.input_requests or {}}
        assert responses, "input_required without input requests"
        state = first.request_state
        assert runs() == 0, "the command ran before anybody approved it"
        # The accepted approval runs the command once.
        result = await call(client, state, responses)
        assert isinstance(result, types.CallToolResult) and not result.is_error, f"the approved call failed: {result}"
        assert runs() == 1, f"the approved call ran {runs()} times"
        # The same approval, sent again, runs nothing and says why.
        for n in range(REPLAYS):
            replay = await call(client, state, responses)
            assert isinstance(replay, types.CallToolResult), f"replay {n + 1}: expected a tool result, got {replay}"
            assert replay.is_error, f"replay {n + 1} was not refused: {text(replay)}"
            assert "this approval was already used; ask again" in text(replay), f"replay {n + 1} does not say why: {text(replay)}"
        assert runs() == 1, f"one approval ran the command {runs()} times"
        # Asking again gets a new approval, which runs once.
        again = await client.session.call_tool("workspace_shell", ARGUMENTS, allow_input_required=True)
        assert isinstance(again, types.InputRequiredResult), f"asking again did not ask: {again}"
        assert again.request_state != state, "asking again returned the used requestState"
        result = await call(client, again.request_state, responses)
        assert not result.is_error and runs() == 2, f"the new approval did not run once: {text(result)}"
    # A restarted server refuses the old approvals too.
    async with Client(params(), mode="2026-07-28", elicitation_callback=accept) as client:
        for old in (state, again.request_state):
            replay = await call(client, old, responses)
            assert isinstance(replay, types.CallToolResult) and replay.is_error, f"a restarted server ran an old approval: {replay}"
            assert "requestState" in text(replay), f"the restarted server does not say why: {text(replay)}"
    assert runs() == 2, f"the command ran {runs()} times for two approvals"
    print(f"ok replay: 2 approvals, {REPLAYS} replays and 2 replays after a restart, {runs()} runs")


anyio.run(main)
