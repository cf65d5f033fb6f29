"""Drives `cheng serve --http`'s /mcp with the official MCP Python SDK client (`mcp.Client`
over Streamable HTTP).

Usage: over_http.py URL WORKSPACE MODE
URL is the /mcp endpoint with the token (`http://127.0.0.1:PORT/mcp?token=T`); MODE is "legacy"
(the initialize handshake and a session), "2026-07-28" (stateless) or "auto". Every check raises
AssertionError with a sentence on failure; success prints "ok <mode>: <checks>".
"""

import os
import sys

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
from mcp import Client

from common import accept, cancel_a_running_sleep, decline, text

URL, WORKSPACE, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
# A duration no other process uses (this process's id in it), to find the sleep again.
SLEEP = f"31.{os.getpid()}3"


def exists(name):
    return os.path.exists(os.path.join(WORKSPACE, name))


async def list_and_read():
    async with Client(URL, mode=MODE) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"read_file", "write_file", "workspace_shell"} <= names, f"tools/list lacks the file and shell tools: {sorted(names)}"
        result = await client.call_tool("read_file", {"file_path": "hello.txt"})
        assert not result.is_error, f"read_file failed: {text(result)}"
        assert "hello over http" in result.structured_content["content"], result.structured_content


async def write(callback, name):
    async with Client(URL, mode=MODE, elicitation_callback=callback) as client:
        return await client.call_tool("write_file", {"file_path": name, "content": "x\n"})


async def approved():
    name = f"approved-{MODE}.txt"
    result = await write(accept, name)
    assert not result.is_error, f"an approved write failed: {text(result)}"
    assert exists(name), "an approved write did not land"


async def declined():
    name = f"declined-{MODE}.txt"
    result = await write(decline, name)
    assert result.is_error, "a declined write was not an error"
    assert not exists(name), "a declined write landed"


async def cancel_sleep():
    async with Client(URL, mode=MODE, elicitation_callback=accept) as client:
        await cancel_a_running_sleep(client, SLEEP)
        # The client still works.
        result = await client.call_tool("read_file", {"file_path": "hello.txt"})
        assert not result.is_error, f"read_file after the cancel failed: {text(result)}"


async def main():
    done = []
    for check in (list_and_read, approved, declined, cancel_sleep):
        await check()
        done.append(check.__name__)
    print(f"ok {MODE}: {', '.join(done)}")


anyio.run(main)
