"""Drives `cheng serve --stdio` with the official MCP Python SDK client (`mcp.Client`).

Usage: client.py CHENG WORKSPACE MODE FORBIDDEN_PORTS_JSON
MODE is "legacy", "2026-07-28" or "auto". FORBIDDEN_PORTS_JSON is {tool: [author and engine
ports]}, written in the test. Every check raises AssertionError with a sentence on failure;
success prints "ok <mode>: <checks>".
"""

import json
import os
import subprocess
import sys
import tempfile
import time

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.shared.message import SessionMessage

from common import accept, cancel_a_running_sleep, decline, sleeps_alive, text

CHENG, WORKSPACE, MODE, FORBIDDEN = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
# Durations no other process on the machine uses (this process's id in them, so that two
# checkouts running the suite at once do not see each other's), to find the sleeps again.
SLEEP = f"31.{os.getpid()}1"
STDIN_SLEEP = f"31.{os.getpid()}2"


def params(*extra):
    return StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, *extra])


def exists(name):
    return os.path.exists(os.path.join(WORKSPACE, name))


async def list_tools():
    async with Client(params(), mode=MODE) as client:
        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        assert {"workspace_git", "workspace_shell"} <= names, f"tools/list lacks workspace_git/workspace_shell: {sorted(names)}"
        unlisted = names - set(FORBIDDEN)
        assert not unlisted, f"tools with no author/engine port list in the test (add them, [] if none): {sorted(unlisted)}"
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
        await cancel_a_running_sleep(client, SLEEP)
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


async def hosts_on_the_card():
    """code_shell's request_hosts beyond the author's allowed_hosts are asked of the person: on
    the card in the handshake era, as an item of their own in the stateless era. Declined, the
    host is never reached; accepted, it is, through the sandbox's proxy."""
    import http.server
    import threading

    from mcp.client.stdio import get_default_environment

    hits = []

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.headers.get("Host"))
            body = b"served"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    policy = scratch_file("network-policy.toml", '[all]\nnetwork_allow = ["docs.test", "other.test"]\n')
    tools = tools_file([{"type": "tools/code_shell", "config": {"allow_network": True, "allowed_hosts": ["docs.test"]}}])
    env = dict(get_default_environment(), CHENG_TEST_RESOLVE="docs.test=127.0.0.1,other.test=127.0.0.1")
    server_params = StdioServerParameters(
        command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, "--policy", policy, "--tools", tools], env=env
    )
    arguments = {"script": f"curl -s http://other.test:{port}/page", "request_hosts": ["other.test"]}
    asked = []

    async def decline_hosts(_ctx, p):
        asked.append(p.message)
        return types.ElicitResult(action="decline" if "other.test" in p.message else "accept", content={})

    try:
        async with Client(server_params, mode=MODE, elicitation_callback=decline_hosts) as client:
            result = await client.call_tool("code_shell", arguments)
            assert any("other.test" in m for m in asked), f"no question named the host: {asked}"
            assert result.is_error and not hits, f"a call with a declined host ran: {text(result)} {hits}"
        asked.clear()
        async with Client(server_params, mode=MODE, elicitation_callback=accept) as client:
            result = await client.call_tool("code_shell", arguments)
            assert not result.is_error and "served" in text(result), f"the approved host was not reached: {text(result)}"
            assert hits == [f"other.test:{port}"], hits
    finally:
        server.shutdown()


# Tools and policy files the checks write; removed when the script ends.
SCRATCH = tempfile.TemporaryDirectory(prefix="cheng-client-")


def scratch_file(name, content):
    path = os.path.join(SCRATCH.name, name)
    with open(path, "w") as f:
        f.write(content)
    return path


def tools_file(entries):
    return scratch_file(f"tools-{len(os.listdir(SCRATCH.name))}.json", json.dumps(entries))


async def presets_are_fixed():
    """An author's preset hides its port and a call cannot override it: `touch` through a tool
    fixed to `true` is refused and the file never appears. The control: the same arguments
    through a tool without the preset create it."""
    marker = f"preset-{MODE}"
    fixed = tools_file([{"type": "tools/workspace_shell", "name": "check", "presets": {"command": "true"}}])
    attack = {"command": "touch", "args": [marker]}
    async with Client(params("--tools", fixed), mode=MODE, elicitation_callback=accept) as client:
        tool = (await client.list_tools()).tools[0]
        assert "command" not in (tool.input_schema or {}).get("properties", {}), f"the preset port is shown: {tool.input_schema}"
        result = await client.call_tool("check", {})
        assert not result.is_error and result.structured_content["success"] is True, text(result)
        result = await client.call_tool("check", attack)
        assert result.is_error, f"a call overrode the author's preset: {text(result)}"
        assert "fixed by the toolkit's author" in text(result), f"the refusal does not say why: {text(result)}"
    assert not exists(marker), "the refused call ran"
    free = tools_file([{"type": "tools/workspace_shell", "name": "shell"}])
    async with Client(params("--tools", free), mode=MODE, elicitation_callback=accept) as client:
        result = await client.call_tool("shell", attack)
        assert not result.is_error, f"the control call failed: {text(result)}"
    assert exists(marker), "the control call did not run: the attack proves nothing"


async def engine_ports_are_refused():
    """Setting an author or engine port in a call is refused, naming the port, with what
    `cheng run` says; nothing runs (the control: the same call without it runs)."""
    marker = f"engine-port-{MODE}"
    arguments = {"command": "touch", "args": [marker], "sandbox_root": "/"}
    async with Client(params(), mode=MODE, elicitation_callback=accept) as client:
        offered = {t.name for t in (await client.list_tools()).tools}
        for tool, ports in FORBIDDEN.items():
            if tool not in offered:
                continue
            for port in ports:
                result = await client.call_tool(tool, {port: "/"})
                assert result.is_error, f"{tool} accepted its author/engine port {port}: {text(result)}"
                assert f"port `{port}`" in text(result), f"{tool}: the refusal does not name {port}: {text(result)}"
        result = await client.call_tool("workspace_shell", arguments)
        assert result.is_error and not exists(marker), f"a call setting sandbox_root ran: {text(result)}"
        said = text(result).split("port `sandbox_root`")[-1].strip()
        cli = subprocess.run(
            [CHENG, "run", "tools/workspace_shell", "--workspace", WORKSPACE, "--input", json.dumps(arguments)],
            capture_output=True,
            text=True,
        )
        assert said and said in cli.stderr, f"the server and `cheng run` disagree:\n{text(result)}\n---\n{cli.stderr}"
        del arguments["sandbox_root"]
        result = await client.call_tool("workspace_shell", arguments)
        assert not result.is_error and exists(marker), f"the control call did not run: {text(result)}"


async def disabled_node_is_not_offered():
    """A node type the operator's policy disables is neither listed nor callable, and the
    server starts with the rest (the control: shell_accepted runs the same call unhindered)."""
    policy = scratch_file("policy.toml", '[nodes."tools/workspace_shell"]\ndisabled = true\n')
    marker = f"disabled-{MODE}"
    async with Client(params("--policy", policy), mode=MODE, elicitation_callback=accept) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "workspace_git" in names and "workspace_shell" not in names, f"tools/list: {sorted(names)}"
        try:
            result = await client.call_tool("workspace_shell", {"command": "touch", "args": [marker]})
            assert result.is_error, f"the disabled node answered: {text(result)}"
        except Exception as e:  # an error answer is as good as an error result
            assert "workspace_shell" in str(e), f"the refusal does not name the tool: {e!r}"
    assert not exists(marker), "the disabled node ran"


async def closing_stdin_kills_children():
    """The server exits 0 on its own when stdin closes, and takes a running child with it.
    The SDK's own transport would kill the whole process tree after a grace period, so this
    check speaks the SDK's ClientSession over a transport that only closes stdin."""
    process = await anyio.open_process(
        [CHENG, "serve", "--stdio", "--workspace", WORKSPACE, "--approve"], stderr=subprocess.DEVNULL
    )
    to_session, from_server = anyio.create_memory_object_stream(100)
    to_server, from_session = anyio.create_memory_object_stream(100)

    async def read():
        buffer = b""
        async for chunk in process.stdout:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                await to_session.send(SessionMessage(message))
        await to_session.aclose()

    async def write():
        async for m in from_session:
            await process.stdin.send((m.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        async with ClientSession(from_server, to_server) as session:
            await session.initialize()

            async def call():
                try:
                    await session.call_tool("workspace_shell", {"command": "sleep", "args": [STDIN_SLEEP]})
                except Exception:
                    pass  # the connection ends under the call

            tg.start_soon(call)
            deadline = time.monotonic() + 10
            while not sleeps_alive(STDIN_SLEEP) and time.monotonic() < deadline:
                await anyio.sleep(0.02)
            assert sleeps_alive(STDIN_SLEEP), "the sleep never started"
            await process.stdin.aclose()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                raise AssertionError("the server did not exit within 5 s of its stdin closing")
            assert process.returncode == 0, f"the server exited {process.returncode}"
            deadline = time.monotonic() + 2
            while sleeps_alive(STDIN_SLEEP) and time.monotonic() < deadline:
                await anyio.sleep(0.02)
            left = sleeps_alive(STDIN_SLEEP)
            for pid in left:
                os.kill(pid, 9)
            assert not left, f"the running child outlived the server: {left}"
            tg.cancel_scope.cancel()


async def main():
    done = []
    for check in (
        list_tools,
        read_only_call,
        shell_accepted,
        shell_declined,
        shell_no_elicitation,
        cancel_sleep,
        presets_are_fixed,
        engine_ports_are_refused,
        disabled_node_is_not_offered,
        hosts_on_the_card,
    ):
        await check()
        done.append(check.__name__)
    if MODE == "legacy":
        # A property of the transport, not of the protocol generation: checked once.
        await closing_stdin_kills_children()
        done.append("closing_stdin_kills_children")
    if MODE == "2026-07-28":
        await tampered_state()
        done.append("tampered_state")
        await several_approvals()
        done.append("several_approvals")
    print(f"ok {MODE}: {', '.join(done)}")


anyio.run(main)
