// cline-mcp e2e client on the official TypeScript MCP SDK: spawns the built server over stdio,
// lists the tools, runs a few calls (some with a progress token), checks every structuredContent
// against the tool's outputSchema, records protocol errors the SDK reports, and prints one JSON
// summary line for the Go test (e2e/ts_test.go).
//
// Input (environment): E2E_SERVER (path), E2E_SERVER_ARGS (JSON array), E2E_SERVER_ENV (JSON
// object: the server's complete environment), E2E_CWD (a plain dir), E2E_REPO (a git checkout).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const env = process.env;
const transport = new StdioClientTransport({
  command: env.E2E_SERVER,
  args: JSON.parse(env.E2E_SERVER_ARGS),
  env: JSON.parse(env.E2E_SERVER_ENV),
  cwd: env.E2E_CWD,
  stderr: "ignore",
});
const client = new Client({ name: "cline-mcp-e2e-ts", version: "1.0.0" });
// Protocol faults the SDK detects (a progress notification for a finished request, a response
// to an unknown id) reach onerror, not the caller; the Go test requires none.
const clientErrors = [];
client.onerror = (err) => clientErrors.push(String(err?.message ?? err));
await client.connect(transport);

const summary = { server: client.getServerVersion(), tools: [], calls: [] };
const listed = await client.listTools();
const validators = {};
const ajv = new AjvJsonSchemaValidator();
for (const t of listed.tools) {
  summary.tools.push({ name: t.name, hasOutputSchema: !!t.outputSchema, readOnly: t.annotations?.readOnlyHint ?? null });
  if (t.outputSchema) validators[t.name] = ajv.getValidator(t.outputSchema);
}

async function call(label, name, args, withProgress) {
  const entry = { label, tool: name, progress: [] };
  const opts = withProgress
    ? { onprogress: (p) => entry.progress.push(p), resetTimeoutOnProgress: true, timeout: 120000 }
    : { timeout: 120000 };
  try {
    const res = await client.callTool({ name, arguments: args }, undefined, opts);
    entry.isError = !!res.isError;
    entry.structured = res.structuredContent ?? null;
    entry.text = res.content?.find((c) => c.type === "text")?.text ?? "";
    const v = validators[name] ? validators[name](res.structuredContent) : { valid: false, errorMessage: "no validator" };
    entry.schemaValid = v.valid;
    if (!v.valid) entry.schemaError = v.errorMessage;
  } catch (err) {
    // The SDK throws when structuredContent does not satisfy the outputSchema.
    entry.sdkError = String(err?.message ?? err);
  }
  entry.progressCount = entry.progress.length;
  entry.progress = entry.progress.slice(0, 5);
  summary.calls.push(entry);
}

await call("ok-with-progress", "ask_cline", { prompt: "Reply fake:slow?seconds=2&interval_ms=200", cwd: env.E2E_CWD }, true);
await call("launch_failed", "ask_cline", { prompt: "hi there", timeoutSeconds: 301 }, false);
await call("non_zero_exit", "ask_cline", { prompt: "go fake:http_401", cwd: env.E2E_CWD }, false);
await call("apply-ok", "apply_cline_edits", { prompt: "Edit fake:edit?path=ts.txt&content=from-ts", cwd: env.E2E_REPO }, false);
await call("apply-not-git", "apply_cline_edits", { prompt: "Edit please", cwd: env.E2E_CWD }, false);
await call("workspace-ok", "ask_cline_workspace", { prompt: "Read fake:read?path=README.md", cwd: env.E2E_REPO }, false);

// Calls with progress whose last notification goes out right before the run ends (an event
// every 40 ms, a 500 ms throttle): where a server (or the SDK, see typescript-sdk#2580) can get
// the order wrong.
summary.quickCalls = 0;
summary.quickProgress = 0;
for (let i = 0; i < 10; i++) {
  await client.callTool({ name: "ask_cline", arguments: { prompt: "Reply fake:slow?seconds=1&interval_ms=40", cwd: env.E2E_CWD } }, undefined, {
    onprogress: () => summary.quickProgress++,
    timeout: 120000,
  });
  summary.quickCalls++;
}

await client.close();
summary.clientErrors = clientErrors;
process.stdout.write(JSON.stringify(summary) + "\n");
