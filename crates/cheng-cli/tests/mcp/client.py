"""Drives `cheng serve --stdio` with the official MCP Python SDK client (`mcp.Client`).

Usage: client.py CHENG WORKSPACE MODE FORBIDDEN_PORTS_JSON
MODE is "legacy", "2026-07-28" or "auto". Every check raises AssertionError with a sentence on
failure; success prints "ok <mode>: <checks>".
"""

import json
import os
import sys
import time

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, MODE, FORBIDDEN = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
# A duration no other process on the machine uses, to find the sleep after the cancel.
SLEEP = "31.4159"


def params(*extra):
    return StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, *extra])


async def accept(_ctx, p):
    return types.ElicitResult(action="accept", content={})


async def decline(_ctx, p):
    return types.ElicitResult(action="decline")


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def exists(name):
    return os.path.exists(os.path.join(WORKSPACE, name))


def sleeps_alive():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and argv[0].endswith(b"sleep") and argv[1] == SLEEP.encode():
            found.append(int(pid))
    return found


async def list_tools():
    async with Client(params(), mode=MODE) as client:
        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        assert {"workspace_git", "workspace_shell"} <= names, f"tools/list lacks workspace_git/workspace_shell: {sorted(names)}"
        for t in tools:
            props = set((t.input_schema or {}).get("properties", {}))
            leaked = props & set(FORBIDDEN.get(t.name, []))
            assert not leaked, f"tool {t.name} shows author/engine ports {sorted(leaked)} in its inputSchema"
            assert t.output_schema, f"tool {t.name} has no outputSchema"
        git = next(t for t in tools if t.name == "workspace_git")
        assert git.annotations is not None and git.annotations.read_only_hint is True
        shell = next(t for t in tools if t.name == "workspace_shell")
        assert shell.annotations.destructive_hint is True, "workspace_shell must be marked destructive"
        md = next(t for t in tools if t.name == "workspace_markdown")
        assert md.annotations.read_only_hint is True, "workspace_markdown must be marked read-only"
        return f"{len(tools)} tools"


async def read_only_call():
    async with Client(params(), mode=MODE) as client:
        result = await client.call_tool("workspace_git", {"operation": "status"})
        assert not result.is_error, f"workspace_git status failed: {text(result)}"
        assert result.structured_content["success"] is True
        assert result.structured_content["operation"] == "status"
        assert text(result), "no summary text"


async def shell(callback, marker, extra=()):
    kwargs = {"elicitation_callback": callback} if callback else {}
    async with Client(params(*extra), mode=MODE, **kwargs) as client:
        return await client.call_tool("workspace_shell", {"command": "touch", "args": [marker], "purpose": "test"})


async def shell_accepted():
    marker = f"accepted-{MODE}"
    result = await shell(accept, marker)
    assert not result.is_error, f"an accepted call failed: {text(result)}"
    assert exists(marker), "an accepted call did not run"


async def shell_declined():
    marker = f"declined-{MODE}"
    result = await shell(decline, marker)
    assert result.is_error, "a declined call was not an error"
    assert not exists(marker), "a declined call ran"
    assert "declined" in text(result) or "not approved" in text(result), f"the result does not say why: {text(result)}"


async def shell_no_elicitation():
    marker = f"unasked-{MODE}"
    result = await shell(None, marker)
    assert result.is_error, "a call nobody approved was not an error"
    assert not exists(marker), "a call nobody approved ran"
    assert "a person" in text(result).lower(), f"the result does not say a person must allow it: {text(result)}"


async def cancel_sleep():
    async with Client(params(), mode=MODE, elicitation_callback=accept) as client:
        with anyio.move_on_after(3):
            await client.call_tool("workspace_shell", {"command": "sleep", "args": [SLEEP], "timeout_ms": 60000})
            raise AssertionError("sleep 31 finished before the cancel")
        # The cancel went out as the scope ended; the process group must be gone within 1 s.
        deadline = time.monotonic() + 1.5
        while sleeps_alive() and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert not sleeps_alive(), f"sleep {SLEEP} still running after the cancel: {sleeps_alive()}"
        # The connection still works.
        result = await client.call_tool("workspace_git", {"operation": "status"})
        assert not result.is_error


async def tampered_state():
    marker = f"tampered-{MODE}"
    arguments = {"command": "touch", "args": [marker]}
    async with Client(params(), mode=MODE, elicitation_callback=accept) as client:
        first = await client.session.call_tool("workspace_shell", arguments, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), f"expected input_required, got {first}"
        keys = list(first.input_requests or {})
        assert keys, "input_required without input requests"
        responses = {k: types.ElicitResult(action="accept", content={}) for k in keys}
        state = first.request_state
        flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
        for bad_state, bad_args in ((flipped, arguments), (state, {"command": "touch", "args": [marker + "-other"]})):
            result = await client.session.call_tool(
                "workspace_shell", bad_args, input_responses=responses, request_state=bad_state, allow_input_required=True
            )
            assert isinstance(result, types.CallToolResult) and result.is_error, f"a tampered retry was not refused: {result}"
            assert "requestState" in text(result), f"the refusal does not say why: {text(result)}"
        assert not exists(marker) and not exists(marker + "-other"), "a tampered retry ran"
        # The untouched state runs.
        result = await client.session.call_tool(
            "workspace_shell", arguments, input_responses=responses, request_state=state, allow_input_required=True
        )
        assert not result.is_error and exists(marker), f"the genuine retry did not run: {text(result)}"


async def several_approvals():
    """The stateless era asks the run, each host read path and each capability as separate
    input requests in one round; declining any one of them runs nothing."""
    import tempfile

    outside = tempfile.mkdtemp(prefix="cheng-read-")
    with open(os.path.join(outside, "seen.txt"), "w") as f:
        f.write("outside")
    arguments = {
        "script": f"ls {outside}",
        "request_read_paths": [outside],
        "allow_network": True,
    }
    asked = []

    async def decline_reads(_ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="decline" if "to read" in p.message else "accept", content={})

    async with Client(params(), mode=MODE, elicitation_callback=decline_reads) as client:
        result = await client.call_tool("code_shell", arguments)
        assert len(asked) == 3, f"expected the run, one read path and one capability asked apart: {asked}"
        assert any(outside in m for m in asked) and any("allow_network" in m for m in asked), asked
        assert result.is_error and "seen.txt" not in text(result), f"a call with a declined read path ran: {text(result)}"
        assert f"reading {outside}" in text(result), f"the refusal does not name what was declined: {text(result)}"
    asked.clear()

    async def accept_all(_ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="accept", content={})

    async with Client(params(), mode=MODE, elicitation_callback=accept_all) as client:
        result = await client.call_tool("code_shell", arguments)
        assert len(asked) == 3, asked
        assert not result.is_error and "seen.txt" in text(result), f"the approved call did not run or saw nothing: {text(result)}"


async def main():
    done = []
    for check in (list_tools, read_only_call, shell_accepted, shell_declined, shell_no_elicitation, cancel_sleep):
        await check()
        done.append(check.__name__)
    if MODE == "2026-07-28":
        await tampered_state()
        done.append("tampered_state")
        await several_approvals()
        done.append("several_approvals")
    print(f"ok {MODE}: {', '.join(done)}")


anyio.run(main)
