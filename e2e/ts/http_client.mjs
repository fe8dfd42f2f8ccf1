// cline-mcp e2e client of the HTTP service on the official TypeScript MCP SDK: connects over
// streamable HTTP with a bearer token (and once without, which must fail), lists the tools, runs
// calls with progress, gets a rate_limited refusal while a slow call holds the tenant's one slot,
// checks every structuredContent against the tool's outputSchema, records protocol errors the SDK
// reports, and prints one JSON summary line for the Go test (e2e/service_ts_e2e_test.go).
//
// Input (environment): E2E_URL (the service's /mcp), E2E_TOKEN, E2E_CWD (a dir under the tenant's root).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const env = process.env;
const url = new URL(env.E2E_URL);
const summary = { calls: [] };

try {
  const anonymous = new Client({ name: "cline-mcp-e2e-ts-anonymous", version: "1.0.0" });
  await anonymous.connect(new StreamableHTTPClientTransport(url));
  summary.anonymousConnected = true;
} catch (err) {
  summary.anonymousError = String(err?.message ?? err);
  summary.anonymousCode = err?.code ?? null;
}

function connect() {
  const client = new Client({ name: "cline-mcp-e2e-ts-http", version: "1.0.0" });
  const errors = [];
  client.onerror = (err) => errors.push(String(err?.message ?? err));
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${env.E2E_TOKEN}` } } });
  return { client, errors, ready: client.connect(transport) };
}

const a = connect();
const b = connect();
await a.ready;
await b.ready;
const listed = await a.client.listTools();
const ajv = new AjvJsonSchemaValidator();
const validators = {};
summary.tools = listed.tools.map((t) => t.name);
for (const t of listed.tools) if (t.outputSchema) validators[t.name] = ajv.getValidator(t.outputSchema);

async function call(c, label, args, withProgress) {
  const entry = { label, progressCount: 0 };
  const opts = withProgress ? { onprogress: () => entry.progressCount++, timeout: 120000 } : { timeout: 120000 };
  try {
    const res = await c.client.callTool({ name: "ask_cline", arguments: { cwd: env.E2E_CWD, ...args } }, undefined, opts);
    entry.isError = !!res.isError;
    entry.structured = res.structuredContent ?? null;
    const v = validators.ask_cline(res.structuredContent);
    entry.schemaValid = v.valid;
    if (!v.valid) entry.schemaError = v.errorMessage;
  } catch (err) {
    entry.sdkError = String(err?.message ?? err); // also when structuredContent fails the outputSchema
  }
  summary.calls.push(entry);
  return entry;
}

await call(a, "ok-with-progress", { prompt: "Reply fake:slow?seconds=2&interval_ms=200" }, true);

// The tenant has one slot and no queue: while a slow call runs, another is refused at once.
let slowProgress;
const started = new Promise((resolve) => (slowProgress = resolve));
const slow = a.client.callTool({ name: "ask_cline", arguments: { cwd: env.E2E_CWD, prompt: "Reply fake:slow?seconds=5&interval_ms=200" } }, undefined, {
  onprogress: () => slowProgress(),
  timeout: 120000,
});
await started;
const refused = await call(b, "refused", { prompt: "Reply with PONG" }, false);
refused.slowStillRunning = true;
const slowRes = await slow;
summary.slowOK = !slowRes.isError;

// Progress right up to the end of each run (an event every 40 ms, a 500 ms throttle).
summary.quickCalls = 0;
for (let i = 0; i < 10; i++) {
  await call(a, `quick-${i}`, { prompt: "Reply fake:slow?seconds=1&interval_ms=40" }, true);
  summary.quickCalls++;
}

await a.client.close();
await b.client.close();
summary.clientErrors = [...a.errors, ...b.errors];
process.stdout.write(JSON.stringify(summary) + "\n");
