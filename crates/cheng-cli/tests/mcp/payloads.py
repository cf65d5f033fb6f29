"""Calls every tool `cheng serve --stdio` offers through the official MCP Python SDK client and
checks that the text content carries the tool's payload, the same text `cheng run --format text`
prints, then the summary.

Usage: payloads.py CHENG WORKSPACE MODE CASES_JSON_FILE [TOOLS_JSON_FILE]
CASES_JSON_FILE holds [{tool, arguments, expect, start?}], written by the test: `expect` is the
payload the CLI printed for the same call on a twin workspace (`{WORKSPACE}` standing for the
workspace's path); `start` is a call whose
`session_id` the case's arguments take (write_stdin). Every tool listed must have a case.
TOOLS_JSON_FILE, when given, is the server's `--tools` file (the author's config of the tools
that need one, such as skill and the notes tools).
Success prints "ok <mode>: <n> tools".
"""

import json
import os
import sys

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, MODE, CASES = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
TOOLS = ["--tools", sys.argv[5]] if len(sys.argv) > 5 else []


async def accept(_ctx, _p):
    return types.ElicitResult(action="accept", content={})


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def main():
    with open(CASES) as f:
        cases = json.load(f)
    params = StdioServerParameters(command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, *TOOLS], env=dict(os.environ))
    async with Client(params, mode=MODE, elicitation_callback=accept) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        missing = listed - {c["tool"] for c in cases}
        assert not missing, f"tools without a payload case: {sorted(missing)}"
        for case in cases:
            arguments = dict(case["arguments"])
            if "start" in case:
                started = await client.call_tool(case["start"]["tool"], case["start"]["arguments"])
                assert not started.is_error, f"{case['tool']}: the session did not start: {text(started)}"
                arguments["session_id"] = started.structured_content["session_id"]
            result = await client.call_tool(case["tool"], arguments)
            shown = text(result)
            expect = case["expect"].replace("{WORKSPACE}", WORKSPACE)
            assert not result.is_error, f"{case['tool']} failed: {shown}"
            assert expect in shown, f"{case['tool']}: the text lacks the payload {expect!r}:\n{shown}"
            summary = result.structured_content.get("summary")
            if summary:
                assert summary in shown, f"{case['tool']}: the text lacks the summary {summary!r}:\n{shown}"
                assert shown.index(summary) >= shown.index(expect), f"{case['tool']}: the summary comes before the payload:\n{shown}"
    print(f"ok {MODE}: {len(cases)} tools")


anyio.run(main)
