// Regenerates fixtures/markdown/markdownlint.oracle.json: what markdownlint (default config)
// reports on the Markdown fixtures, for the rules cheng implements. A test compares cheng's
// diagnostics with it.
//
//   mkdir /tmp/ml && cd /tmp/ml && npm install markdownlint@0.40.0
//   NODE_PATH=/tmp/ml/node_modules node nodes/documents/scripts/markdownlint-oracle.mjs
//
// Run from the repository root; node_modules is never committed.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "x.js"));
const { lint } = await import(require.resolve("markdownlint/promise"));
const { getVersion } = await import(require.resolve("markdownlint"));
const version = getVersion();

const IMPLEMENTED = ["MD001", "MD009", "MD012", "MD022", "MD024", "MD025", "MD034", "MD040", "MD042", "MD045", "MD047", "MD051", "MD052"];
const dir = "fixtures/markdown";
const files = ["clean.md", "edge.md", "headings.md", "links.md", "whitespace.md", "site/index.md", "site/docs/guide.md"];
const strings = Object.fromEntries(files.map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")]));
const results = await lint({ strings, config: { default: true } });
const out = { generator: `markdownlint ${version}, default config`, rules: IMPLEMENTED, files: {} };
for (const f of files) {
  out.files[f] = results[f]
    .filter((e) => IMPLEMENTED.includes(e.ruleNames[0]))
    .map((e) => ({ alias: e.ruleNames[0], line: e.lineNumber, column: e.errorRange ? e.errorRange[0] : null, detail: e.errorDetail ?? null }));
}
fs.writeFileSync(path.join(dir, "markdownlint.oracle.json"), JSON.stringify(out, null, 1) + "\n");
