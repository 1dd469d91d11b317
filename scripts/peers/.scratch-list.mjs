import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const t = new StdioClientTransport({ command: process.argv[2], args: process.argv.slice(3), stderr: "ignore" });
const c = new Client({ name: "x", version: "1" });
await c.connect(t);
console.log(JSON.stringify({server: c.getServerVersion(), caps: c.getServerCapabilities(), tools: (await c.listTools()).tools}, null, 1));
await c.close();
