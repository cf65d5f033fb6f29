// Calls every tool `cheng serve --stdio` offers through the official MCP TypeScript SDK client
// and checks that the text content carries the tool's payload (the text `cheng run --format
// text` prints for the same call), then the summary. The cases are those of payloads.py.
//
// Usage: node payloads.mjs CHENG WORKSPACE CASES_JSON_FILE [TOOLS_JSON_FILE] (the server's
// --tools file); success prints "ok: <n> tools".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const [cheng, workspace, casesFile, toolsFile] = process.argv.slice(2);
const tools = toolsFile ? ["--tools", toolsFile] : [];
const cases = JSON.parse(readFileSync(casesFile, "utf8"));

const client = new Client({ name: "cheng-payloads", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: {} }));
const transport = new StdioClientTransport({ command: cheng, args: ["serve", "--stdio", "--workspace", workspace, ...tools], env: process.env, stderr: "inherit" });
await client.connect(transport);

const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

const listed = (await client.listTools()).tools.map((t) => t.name);
const covered = new Set(cases.map((c) => c.tool));
const missing = listed.filter((name) => !covered.has(name));
assert.deepEqual(missing, [], `tools without a payload case: ${missing}`);

for (const c of cases) {
  const args = { ...c.arguments };
  if (c.start) {
    const started = await client.callTool({ name: c.start.tool, arguments: c.start.arguments });
    assert.ok(!started.isError, `${c.tool}: the session did not start: ${text(started)}`);
    args.session_id = started.structuredContent.session_id;
  }
  const result = await client.callTool({ name: c.tool, arguments: args });
  const shown = text(result);
  const expect = c.expect.replaceAll("{WORKSPACE}", workspace);
  assert.ok(!result.isError, `${c.tool} failed: ${shown}`);
  assert.ok(shown.includes(expect), `${c.tool}: the text lacks the payload ${JSON.stringify(expect)}:\n${shown}`);
  const summary = result.structuredContent?.summary;
  if (summary) {
    assert.ok(shown.includes(summary), `${c.tool}: the text lacks the summary ${JSON.stringify(summary)}:\n${shown}`);
    assert.ok(shown.indexOf(summary) >= shown.indexOf(expect), `${c.tool}: the summary comes before the payload:\n${shown}`);
  }
}
await client.close();
console.log(`ok: ${cases.length} tools`);
