#!/usr/bin/env node
// A scripted ACP client (the editor side) on the official TypeScript
// SDK, for draftfs's tests.
//
//   node editor.mjs --cwd DIR --prompts FILE --out FILE [--fs]
//        [--terminal] [--slow PATH] [--log DIR] [-- AGENT ARGS...]
//
// It talks ACP on its own stdin/stdout, or with `--` to an agent it
// spawns. It initializes (advertising fs read/write with --fs, served
// from disk as in the SDK's example client, and terminals with
// --terminal; a read of the --slow path waits until it is cancelled),
// opens a session in DIR, and sends each entry of the prompts file (a
// JSON array) as one prompt: an array of agent steps (see agent.mjs), or
// the string "cancel" for a session/cancel notification. It writes to
// --out a JSON object: initialize's result, the session id, each turn's
// results (or the error that ended the prompt), and the fs and terminal
// requests it received. With --log, every byte read and written goes to
// editor-in.jsonl and editor-out.jsonl there.

import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";

const args = process.argv.slice(2);
const opt = { fs: false, terminal: false, slow: null, agent: null };
for (let i = 0; i < args.length; i++) {
  switch (args[i]) {
    case "--cwd": opt.cwd = args[++i]; break;
    case "--prompts": opt.prompts = args[++i]; break;
    case "--out": opt.out = args[++i]; break;
    case "--log": opt.log = args[++i]; break;
    case "--fs": opt.fs = true; break;
    case "--terminal": opt.terminal = true; break;
    case "--slow": opt.slow = args[++i]; break;
    case "--": opt.agent = args.slice(i + 1); i = args.length; break;
    default: throw new Error(`unknown argument ${args[i]}`);
  }
}

function tap(file) {
  return new TransformStream({
    transform(chunk, controller) {
      fs.appendFileSync(file, chunk);
      controller.enqueue(chunk);
    },
  });
}

let child = null;
let input, output;
if (opt.agent) {
  child = spawn(opt.agent[0], opt.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  input = Readable.toWeb(child.stdout);
  output = Writable.toWeb(child.stdin);
} else {
  input = Readable.toWeb(process.stdin);
  output = Writable.toWeb(process.stdout);
}
if (opt.log) {
  input = input.pipeThrough(tap(path.join(opt.log, "editor-in.jsonl")));
  const t = tap(path.join(opt.log, "editor-out.jsonl"));
  t.readable.pipeTo(output).catch(() => {});
  output = t.writable;
}

const seen = { fs: [], terminal: [], fsCancelled: 0 };

function sliceLines(text, line, limit) {
  const rows = text.split("\n");
  const start = line ? line - 1 : 0;
  const end = limit == null ? rows.length : Math.min(rows.length, start + limit);
  return rows.slice(start, end).join("\n") + (end < rows.length ? "\n" : "");
}

let app = acp.client({ name: "draftfs-test-editor" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
    outcome: { outcome: "selected", optionId: params.options[0].optionId },
  }));
if (opt.fs) {
  app = app
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params, signal }) => {
      seen.fs.push({ method: "fs/read_text_file", params });
      if (params.path === opt.slow) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
        seen.fsCancelled++;
        throw acp.RequestError.requestCancelled();
      }
      let text;
      try {
        text = await fs.promises.readFile(params.path, "utf8");
      } catch (e) {
        if (e.code === "ENOENT") throw acp.RequestError.resourceNotFound(params.path);
        throw e;
      }
      return { content: params.line || params.limit != null ? sliceLines(text, params.line, params.limit) : text };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      seen.fs.push({ method: "fs/write_text_file", params });
      await fs.promises.writeFile(params.path, params.content);
      return {};
    });
}
if (opt.terminal) {
  app = app
    .onRequest(acp.methods.client.terminal.create, ({ params }) => {
      seen.terminal.push(params);
      return { terminalId: `term-${seen.terminal.length}` };
    })
    .onRequest(acp.methods.client.terminal.release, () => ({}));
}

const prompts = JSON.parse(fs.readFileSync(opt.prompts, "utf8"));
const report = { turns: [], seen };
try {
  await app.connectWith(acp.ndJsonStream(output, input), async (ctx) => {
    report.initialize = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: opt.fs, writeTextFile: opt.fs }, terminal: opt.terminal },
      clientInfo: { name: "draftfs-test-editor", version: "1" },
    });
    const session = await ctx.buildSession(opt.cwd).start();
    report.sessionId = session.sessionId;
    for (const p of prompts) {
      if (p === "cancel") {
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
        continue;
      }
      const turn = { texts: [] };
      report.turns.push(turn);
      // A prompt that fails (the agent died) is recorded at once: the
      // connection may close before this loop sees it.
      const failed = session.prompt(JSON.stringify(p)).then(
        () => new Promise(() => {}),
        (e) => {
          turn.promptError = { code: e.code ?? null, message: String(e.message) };
          return { kind: "error" };
        },
      );
      for (;;) {
        const m = await Promise.race([session.nextUpdate().catch(() => failed), failed]);
        if (m.kind === "error") return;
        if (m.kind === "stop") break;
        if (m.update.sessionUpdate === "agent_message_chunk" && m.update.content.type === "text") {
          turn.texts.push(m.update.content.text);
        }
      }
      // The agent's last chunk holds the turn's results.
      Object.assign(turn, JSON.parse(turn.texts.pop()));
    }
    session.dispose();
  });
} catch (e) {
  report.connectionError = String(e.message);
}
fs.writeFileSync(opt.out, JSON.stringify(report));
if (child) {
  child.stdin.end();
  await new Promise((resolve) => child.on("exit", resolve));
}
process.exit(0);
