"""Drives tools/run_command of `cheng serve --stdio` with the official MCP Python SDK client
(`mcp.Client`): what a model is offered, an approved run at an output level, a declined card, and
the refusal under the default operator policy (raw shell off), where no card is shown and
nothing runs.

Usage: run_command.py CHENG WORKSPACE POLICY MODE
POLICY is a policy file allowing raw shell for run_command. Every check raises AssertionError
with a sentence on failure; success prints "ok MODE".
"""

import os
import sys

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, POLICY, MODE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
CARDS = []


def params(*extra):
    return StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, *extra])


async def accept(_ctx, p):
    CARDS.append(p.message)
    return types.ElicitResult(action="accept", content={})


async def decline(_ctx, p):
    CARDS.append(p.message)
    return types.ElicitResult(action="decline")


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def exists(name):
    return os.path.exists(os.path.join(WORKSPACE, name))


async def offered():
    async with Client(params("--policy", POLICY), mode=MODE) as c:
        tools = (await c.list_tools()).tools
        tool = next((t for t in tools if t.name == "run_command"), None)
        assert tool is not None, f"run_command is not offered: {[t.name for t in tools]}"
        assert "sh -c" in tool.description and "POSIX" in tool.description, f"the description does not name the shell: {tool.description}"
        props = tool.input_schema["properties"]
        assert set(props) == {"command", "working_dir", "timeout_secs", "output_level"}, f"the model sees other ports: {sorted(props)}"
        assert props["output_level"]["enum"] == ["error", "warning", "info", "all"], props["output_level"]
        assert tool.input_schema.get("required") == ["command"], tool.input_schema


async def approved_at_a_level():
    CARDS.clear()
    command = "echo compiling; echo 'warning: unused x'; echo 'oops' >&2; touch approved.txt"
    async with Client(params("--policy", POLICY), mode=MODE, elicitation_callback=accept) as c:
        result = await c.call_tool("run_command", {"command": command, "output_level": "warning"})
    assert not result.is_error, f"an approved run failed: {text(result)}"
    assert exists("approved.txt"), "the approved command did not run"
    assert len(CARDS) == 1 and "sh -c" in CARDS[0] and "approved.txt" in CARDS[0], f"not one card showing the command: {CARDS}"
    out = result.structured_content
    assert out["stdout_warnings"] == "warning: unused x" and out["warning_count"] == 1, out
    assert out["stdout"] is None and out["stderr"] == "oops\n" and out["exit_code"] == 0, out
    assert out["scope"] == "workspace", out
    assert "warning: unused x" in text(result) and "compiling" not in text(result), f"the text content is not the level's: {text(result)}"


async def declined():
    CARDS.clear()
    async with Client(params("--policy", POLICY), mode=MODE, elicitation_callback=decline) as c:
        result = await c.call_tool("run_command", {"command": "touch declined.txt"})
    assert result.is_error, "a declined run was not an error"
    assert len(CARDS) == 1, CARDS
    assert not exists("declined.txt"), "a declined run ran"


async def refused_by_default():
    CARDS.clear()
    # No --policy: the built-in default, under which raw shell is off.
    async with Client(params(), mode=MODE, elicitation_callback=accept) as c:
        tools = (await c.list_tools()).tools
        assert any(t.name == "run_command" for t in tools), "run_command is offered, and says why it refuses"
        result = await c.call_tool("run_command", {"command": "touch refused.txt"})
    assert result.is_error, f"raw shell ran under the default policy: {text(result)}"
    assert "shell_syntax = true" in text(result) and "tools/run_command" in text(result), f"the refusal does not name the rule: {text(result)}"
    assert CARDS == [], f"a card was shown for a call the operator forbids: {CARDS}"
    assert not exists("refused.txt"), "the refused command ran"


async def main():
    await offered()
    await refused_by_default()
    await approved_at_a_level()
    await declined()
    print(f"ok {MODE}")


anyio.run(main)
