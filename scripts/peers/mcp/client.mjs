// mcp/client.mjs drives an MCP server through the official TypeScript SDK
// client, for draftfs's differential tests and benchmarks.
//
//   node mcp/client.mjs SCRIPT.json -- SERVER_CMD [ARGS...]
//
// SCRIPT.json is {"roots"?: [uri...], "steps": [step...]}. With "roots" the
// client declares the roots capability and answers roots/list with them.
// Steps, each answered by one element of the JSON array printed on stdout:
//
//   {"op": "tools"}                          → the tools/list result
//   {"op": "call", "name", "args"}           → the tools/call result, or {"error"}
//   {"op": "roots", "roots": [uri...]}       → replaces the roots and sends
//                                              notifications/roots/list_changed
//   {"op": "sleep", "ms"}                    → waits
//   {"op": "read", "uri"}                    → the resources/read result, or {"error"}
//   {"op": "subscribe", "uri"}               → {} once subscribed
//   {"op": "updates", "ms"}                  → waits ms, then the URIs of the
//                                              notifications/resources/updated
//                                              received so far (and clears them)
//   {"op": "bench", "name", "args", "n", "concurrency"?}
//                                            → n calls (concurrency at a time):
//                                              {n, concurrency, wallMs, perSec,
//                                              meanMs, p50Ms, p90Ms, p99Ms, maxMs}
//
// The server's stderr is passed through.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ListRootsRequestSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const sep = process.argv.indexOf("--");
if (sep < 3 || sep + 1 >= process.argv.length) {
  console.error("usage: node mcp/client.mjs SCRIPT.json -- SERVER_CMD [ARGS...]");
  process.exit(2);
}
const script = JSON.parse(readFileSync(process.argv[2], "utf8"));
const [command, ...args] = process.argv.slice(sep + 1);

let roots = script.roots ?? null;
const capabilities = roots ? { roots: { listChanged: true } } : {};
const client = new Client({ name: "draftfs-test-client", version: "1.0.0" }, { capabilities });
if (roots) {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: roots.map((uri) => ({ uri })),
  }));
}
let updates = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updates.push(n.params.uri);
});

const transport = new StdioClientTransport({
  command,
  args,
  env: process.env,
  stderr: "inherit",
});
await client.connect(transport);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = [];
for (const step of script.steps) {
  switch (step.op) {
    case "tools":
      out.push(await client.listTools());
      break;
    case "call":
      try {
        out.push(await client.callTool({ name: step.name, arguments: step.args ?? {} }));
      } catch (e) {
        out.push({ error: e instanceof Error ? e.message : String(e) });
      }
      break;
    case "roots":
      roots = step.roots;
      await client.sendRootsListChanged();
      out.push({});
      break;
    case "sleep":
      await sleep(step.ms);
      out.push({});
      break;
    case "read":
      try {
        out.push(await client.readResource({ uri: step.uri }));
      } catch (e) {
        out.push({ error: e instanceof Error ? e.message : String(e) });
      }
      break;
    case "subscribe":
      await client.subscribeResource({ uri: step.uri });
      out.push({});
      break;
    case "updates":
      await sleep(step.ms ?? 0);
      out.push({ uris: updates });
      updates = [];
      break;
    case "bench": {
      const n = step.n;
      const conc = step.concurrency ?? 1;
      const lat = [];
      let next = 0;
      const worker = async () => {
        while (next < n) {
          next++;
          const t0 = process.hrtime.bigint();
          const r = await client.callTool({ name: step.name, arguments: step.args ?? {} });
          lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (r.isError) throw new Error(`${step.name}: ${r.content?.[0]?.text}`);
        }
      };
      const t0 = process.hrtime.bigint();
      await Promise.all(Array.from({ length: conc }, worker));
      const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
      lat.sort((a, b) => a - b);
      const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
      out.push({
        n, concurrency: conc, wallMs, perSec: (n * 1000) / wallMs,
        meanMs: lat.reduce((a, b) => a + b, 0) / lat.length,
        p50Ms: pct(50), p90Ms: pct(90), p99Ms: pct(99), maxMs: lat[lat.length - 1],
      });
      break;
    }
    default:
      throw new Error(`unknown step ${JSON.stringify(step)}`);
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
