"""Drives tools/skill and the notes tools of `cheng serve --stdio --tools TOOLS` with the official
MCP Python SDK client (`mcp.Client`): the skill catalogue in the tool's description (stable for
the connection) and a call (which scans again), the notes listed, written (each write approved or
declined through elicitation, since the toolkit sets notes_write_sensitive), read, and names that
could leave or hide in the notes directory refused with the reason.

Usage: notes.py CHENG WORKSPACE MODE TOOLS_JSON_FILE
HOME holds skills/deploy/SKILL.md and the notes directory notes/ (the toolkit names ~/skills and
~/notes). MODE: "legacy" (approvals asked mid-call) or "2026-07-28" (input_required rounds).
Raises AssertionError with a sentence on failure; success prints "ok notes (MODE)".
"""

import os
import sys

if not __debug__:
    sys.exit("assert statements are off (python -O or PYTHONOPTIMIZE): these checks would prove nothing")

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

CHENG, WORKSPACE, MODE, TOOLS = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
HOME = os.environ["HOME"]
NOTES = os.path.join(HOME, "notes")
CARDS = []


async def answer(_ctx, p):
    CARDS.append(p.message)
    action = "decline" if "DECLINE ME" in p.message else "accept"
    return types.ElicitResult(action=action, content={} if action == "accept" else None)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def call(c, tool, args):
    result = await c.call_tool(tool, args)
    return result, result.structured_content or {}


def note_files():
    return sorted(os.listdir(NOTES)) if os.path.isdir(NOTES) else []


async def main():
    params = StdioServerParameters(
        command=CHENG, args=["serve", "--stdio", "--workspace", WORKSPACE, "--tools", TOOLS], env=dict(os.environ)
    )
    async with Client(params, mode=MODE, elicitation_callback=answer) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert sorted(tools) == ["notes_list", "notes_read", "notes_write", "skill"], sorted(tools)
        described = tools["skill"].description
        assert "\n\nSkills:\n- deploy: Ship a release (tag, build, upload)" in described, described
        assert "worth writing when" in tools["notes_write"].description, tools["notes_write"].description
        assert "every turn" in tools["notes_write"].description
        assert "A person approves each call" in tools["notes_write"].description, "the model is not told writes wait for a person"
        for name, tool in tools.items():
            ports = set(tool.input_schema.get("properties", {}))
            assert not ports & {"skill_dirs", "notes_dir", "notes_write_sensitive"}, f"{name} offers an author port: {ports}"

        # The author's ports cannot be set by a call (the control: the same call without them runs).
        for tool, args in [("skill", {"name": "deploy", "skill_dirs": ["/etc"]}), ("notes_read", {"name": "x", "notes_dir": "/etc"}),
                           ("notes_write", {"name": "x", "content": "x", "notes_write_sensitive": False})]:
            result, _ = await call(c, tool, args)
            port = next(k for k in args if k not in ("name", "content"))
            assert result.is_error and f"port `{port}`" in text(result), f"{tool} accepted {port}: {text(result)}"
        assert CARDS == [] and note_files() == [], "a refused call ran"

        # A call loads the whole SKILL.md.
        result, out = await call(c, "skill", {"name": "deploy"})
        assert not result.is_error, text(result)
        with open(os.path.join(HOME, "skills", "deploy", "SKILL.md"), encoding="utf-8") as f:
            assert out["content"] == f.read(), out
        assert "1. Tag the release." in text(result), text(result)
        # A missing name lists what exists.
        result, out = await call(c, "skill", {"name": "deplyo"})
        assert result.is_error and out["error_kind"] == "LOCAL_EXECUTOR_NOT_FOUND", out
        assert "the skills are: deploy" in out["error"], out
        # A skill added now: the description stays as it was, a call finds it.
        os.makedirs(os.path.join(HOME, "skills", "late"))
        with open(os.path.join(HOME, "skills", "late", "SKILL.md"), "w", encoding="utf-8") as f:
            f.write("---\ndescription: Added while serving\n---\nLate body\n")
        again = {t.name: t for t in (await c.list_tools()).tools}
        assert again["skill"].description == described, "the description changed during the connection"
        result, out = await call(c, "skill", {"name": "late"})
        assert not result.is_error and out["content"].endswith("Late body\n"), out

        # Notes: none yet, one written (approved on a card), listed, read, replaced.
        result, out = await call(c, "notes_list", {})
        assert not result.is_error and out["count"] == 0, out
        result, out = await call(c, "notes_write", {"name": "build-setup", "content": "Build with cargo\nthen test\n"})
        assert not result.is_error and out["created"] is True, text(result)
        assert len(CARDS) == 1 and "create note build-setup" in CARDS[0] and "Build with cargo" in CARDS[0], CARDS
        result, out = await call(c, "notes_list", {})
        assert out["count"] == 1 and out["notes"][0]["name"] == "build-setup", out
        assert out["notes"][0]["preview"] == "Build with cargo" and out["notes"][0]["modified"], out
        assert "build-setup (" in text(result) and "): Build with cargo" in text(result), text(result)
        result, out = await call(c, "notes_read", {"name": "build-setup"})
        assert not result.is_error and out["content"] == "Build with cargo\nthen test\n", out
        result, out = await call(c, "notes_write", {"name": "build-setup", "content": "Replaced\n"})
        assert not result.is_error and out["created"] is False, out
        assert "replace note build-setup (27 bytes now)" in CARDS[-1], CARDS[-1]
        # Declined on the card: nothing is written.
        result, out = await call(c, "notes_write", {"name": "declined", "content": "DECLINE ME"})
        assert result.is_error and out["error_kind"] == "LOCAL_EXECUTOR_APPROVAL_DENIED", out
        assert note_files() == ["build-setup.md"], note_files()

        # An escape sequence and a bidi override reach the card escaped (and the note raw).
        CARDS.clear()
        name, content = "report\u202etxt.sh", "line\r\x1b[2K  command:  harmless\n"
        result, out = await call(c, "notes_write", {"name": name, "content": content})
        assert not result.is_error, text(result)
        assert len(CARDS) == 1, CARDS
        assert "\x1b" not in CARDS[0] and "\u202e" not in CARDS[0] and "\r" not in CARDS[0], repr(CARDS[0])
        assert "report\\u{202e}txt.sh" in CARDS[0] and "\\u{1b}[2K" in CARDS[0], CARDS[0]
        with open(os.path.join(NOTES, name + ".md"), encoding="utf-8", newline="") as f:
            assert f.read() == content, "the positive control: the note holds the raw text"

        # Names that could leave or hide: refused, with the reason, before any store.
        for bad, reason in [("../x", "separator"), (".hidden", "starts with a dot"), ("a/b", "separator"),
                            ("x" * 101, "at most 100"), ("..", "`..`"), ("", "empty")]:
            for tool, args in [("notes_write", {"name": bad, "content": "x"}), ("notes_read", {"name": bad})]:
                result, out = await call(c, tool, args)
                assert result.is_error and out.get("error_kind") == "LOCAL_EXECUTOR_INVALID_INPUT", f"{tool} {bad!r}: {out}"
                assert reason in out["error"], f"{tool} {bad!r}: {out['error']}"
        assert sorted(note_files()) == sorted(["build-setup.md", name + ".md"]), note_files()
        result, out = await call(c, "notes_read", {"name": "missing"})
        assert result.is_error and "the notes are: build-setup" in out["error"], out
    print(f"ok notes ({MODE})")


anyio.run(main)
