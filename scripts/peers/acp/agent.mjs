#!/usr/bin/env node
// A scripted ACP agent on the official TypeScript SDK, for draftfs's
// tests. Each session/prompt carries a JSON array of steps as its text;
// the agent runs them against the client (fs/*, terminal/*,
// session/update) and answers with one agent_message_chunk holding the
// JSON array of their results, then ends the turn.
//
// Steps: {op:"caps"} (the clientCapabilities initialize brought),
// {op:"read", path, line?, limit?, lengthOnly?}, {op:"write", path, content},
// {op:"terminal", command, args?, cwd?}, {op:"update", text, _meta?},
// {op:"cancelRead", path, afterMs} (starts a read and cancels it),
// {op:"bench", path, count, warmup, size} (timed sequential reads),
// {op:"exit", code} (dies in the middle of the turn). Steps that never
// touch fs/*, as agents with their own tools do: {op:"readFile", path}
// (readFileSync), {op:"writeFile", path, content} (writeFileSync),
// {op:"sh", script} (spawns sh -c SCRIPT in the agent's directory),
// {op:"cwd"} (the agent's working directory).
//
// With ACP_LOG_DIR set, every byte read and written goes to
// agent-in.jsonl and agent-out.jsonl there, as it was on the wire.

import * as acp from "@agentclientprotocol/sdk";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";

const logDir = process.env.ACP_LOG_DIR;

function tap(file) {
  return new TransformStream({
    transform(chunk, controller) {
      fs.appendFileSync(file, chunk);
      controller.enqueue(chunk);
    },
  });
}

let input = Readable.toWeb(process.stdin);
let output = Writable.toWeb(process.stdout);
if (logDir) {
  input = input.pipeThrough(tap(path.join(logDir, "agent-in.jsonl")));
  const t = tap(path.join(logDir, "agent-out.jsonl"));
  t.readable.pipeTo(output).catch(() => {});
  output = t.writable;
}

let clientCapabilities = null;
let sessions = 0;
const cancelled = [];

function failure(e) {
  if (e instanceof acp.RequestError) {
    return { error: { code: e.code, message: e.message, data: e.data ?? null } };
  }
  return { error: { code: null, message: String(e?.message ?? e) } };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function step(s, sessionId, client) {
  switch (s.op) {
    case "caps":
      return clientCapabilities;
    case "read": {
      const params = { sessionId, path: s.path };
      if (s.line !== undefined) params.line = s.line;
      if (s.limit !== undefined) params.limit = s.limit;
      try {
        const r = await client.request(acp.methods.client.fs.readTextFile, params);
        return s.lengthOnly ? { length: Buffer.byteLength(r.content) } : r;
      } catch (e) {
        return failure(e);
      }
    }
    case "write":
      try {
        return (await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: s.path, content: s.content })) ?? {};
      } catch (e) {
        return failure(e);
      }
    case "terminal":
      try {
        return await client.request(acp.methods.client.terminal.create, { sessionId, command: s.command, args: s.args ?? [], cwd: s.cwd ?? null });
      } catch (e) {
        return failure(e);
      }
    case "update":
      await client.notify(acp.methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: s.text } },
        _meta: s._meta,
      });
      return { sent: true };
    case "cancelRead": {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), s.afterMs);
      try {
        return await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: s.path }, { cancellationSignal: ac.signal });
      } catch (e) {
        return failure(e);
      }
    }
    case "bench": {
      const times = [];
      for (let i = 0; i < s.warmup + s.count; i++) {
        const t0 = process.hrtime.bigint();
        const r = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: s.path });
        const dt = Number(process.hrtime.bigint() - t0) / 1000;
        if (Buffer.byteLength(r.content) !== s.size) {
          throw new Error(`read ${Buffer.byteLength(r.content)} bytes, want ${s.size}`);
        }
        if (i >= s.warmup) times.push(dt);
      }
      const total = times.reduce((a, b) => a + b, 0);
      times.sort((a, b) => a - b);
      return {
        count: s.count,
        p50us: percentile(times, 50),
        p99us: percentile(times, 99),
        meanUs: total / times.length,
        opsPerSec: (times.length * 1e6) / total,
        mbPerSec: (times.length * s.size) / total,
      };
    }
    case "exit":
      process.exit(s.code);
    case "readFile":
      try {
        return { content: fs.readFileSync(s.path, "utf8") };
      } catch (e) {
        return failure(e);
      }
    case "writeFile":
      try {
        fs.writeFileSync(s.path, s.content);
        return {};
      } catch (e) {
        return failure(e);
      }
    case "sh": {
      const r = spawnSync("sh", ["-c", s.script], { encoding: "utf8" });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }
    case "cwd":
      return { cwd: process.cwd() };
  }
  return { error: { message: `unknown step ${s.op}` } };
}

acp
  .agent({ name: "draftfs-test-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    clientCapabilities = params.clientCapabilities ?? null;
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: true },
      agentInfo: { name: "draftfs-test-agent", version: "1" },
    };
  })
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `sess-${++sessions}` }))
  .onRequest(acp.methods.agent.session.load, () => ({}))
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    cancelled.push(params.sessionId);
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.find((b) => b.type === "text")?.text ?? "[]";
    const results = [];
    for (const s of JSON.parse(text)) {
      results.push(await step(s, params.sessionId, client));
    }
    await client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify({ results, cancelled }) } },
    });
    return { stopReason: "end_turn" };
  })
  .connect(acp.ndJsonStream(output, input))
  .closed.then(() => process.exit(0));
