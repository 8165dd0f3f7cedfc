/** Starts the real server on port 0 with a temp data dir, in this process or as a child process. */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { loadWebAssets, type WebAssets } from '../../src/api/page.ts';
import { defaultItems, PROJECT_ROOT, webFiles } from '../../src/paths.ts';
import { createServer, type AssessdHttpServer, type ServerOptions } from '../../src/server.ts';
import type { FileSystem } from '../../src/store/atomic-file.ts';
import { fileLogins } from '../../src/store/logins.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { openEngine, type Engine } from '../../src/engine/index.ts';
import type { ProxyView } from '../../src/api/proxy.ts';
import { openCa } from '../../src/proxy/ca.ts';
import { evidenceRecorder } from '../../src/proxy/evidence-recorder.ts';
import { startProxy, type ProxyServer } from '../../src/proxy/index.ts';
import { openEvidence, type Evidence } from '../../src/evidence/store.ts';
import { readProcStat } from '../../src/engine/proc.ts';
import { startEnv, startFlags } from '../../bench/start-flags.mjs';

export interface TestServer {
  url: string;
  port: number;
  dataDir: string;
  store: Store;
  engine: Engine;
  evidence: Evidence;
  server: AssessdHttpServer;
  logs: string[];
  /** Stops the server and releases the data dir (the dir stays, for a restart). */
  stop(): Promise<void>;
  /** stop() and remove the data dir. */
  close(): Promise<void>;
}

export interface StartOptions extends Partial<Omit<ServerOptions, 'store' | 'web' | 'engine' | 'evidence' | 'proxy'>> {
  dataDir?: string;
  /** An intercepting proxy beside it on a free port (its CA in the data directory), recording into its transactions. */
  proxy?: boolean;
  fs?: FileSystem;
  /** The engine's workers (default 2), and its options. */
  workers?: number;
  runTimeoutMs?: number;
  checkTimeoutMs?: number;
  maxOutputBytes?: number;
  /** How often the transactions' maintenance runs (ms; the store's default 1 s). */
  maintenanceEvery?: number;
}

let web: WebAssets | undefined;

/** A port that was free a moment ago on `host` (the caller binds it next). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const probe = createNetServer().listen(0, host);
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export async function tempDir(prefix = 'assessd-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await tempDir());
  const logs: string[] = [];
  const log = (line: string) => void logs.push(line);
  const defaults = defaultItems();
  web ??= loadWebAssets(webFiles());
  const store = await openStore({ dir: dataDir, defaults, fs: options.fs, log });
  const evidence = await openEvidence({ dataDir, store, fs: options.fs, log, maintenanceEvery: options.maintenanceEvery });
  const engine = await openEngine({
    store,
    dataDir,
    workers: options.workers ?? 2,
    runTimeoutMs: options.runTimeoutMs ?? 60_000,
    checkTimeoutMs: options.checkTimeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    evidence,
    log,
  });
  let proxy: ProxyServer | undefined;
  let proxyView: ProxyView | undefined;
  if (options.proxy) {
    const ca = await openCa(dataDir);
    proxy = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], recorder: evidenceRecorder({ store, evidence, log }), log });
    const running = proxy;
    proxyView = { host: running.host, port: running.port, ca: async () => ca, counts: () => running.counts(), needsToken: false };
  }
  const { proxy: _wanted, maintenanceEvery: _every, ...serverOptions } = options;
  // the logins in the data directory, as start() keeps them
  const logins = fileLogins(dataDir, log);
  const server = createServer({ defaults, logins, ...serverOptions, store, engine, evidence, web, log, ...(proxyView ? { proxy: proxyView } : {}) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stop = async () => {
    await new Promise((resolve) => {
      server.close(resolve);
      server.closeAllConnections();
    });
    await proxy?.close();
    await engine.close();
    await logins.close?.();
    await evidence.close();
    await store.close();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    store,
    engine,
    evidence,
    server,
    logs,
    stop,
    async close() {
      await stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  raw: Buffer;
  /** The parsed JSON body (throws if the body is not JSON). */
  json: any;
}

/**
 * Requests to the server at `base()` with a bearer token: `auth` adds it to a request's options,
 * `api` makes a request that must succeed and answers its JSend data.
 */
export function withToken(base: () => string, token: string) {
  const auth = (options: RequestOptions = {}): RequestOptions => ({ ...options, headers: { authorization: `Bearer ${token}`, ...options.headers } });
  async function api<T = any>(path: string, options: RequestOptions = {}): Promise<T> {
    const res = await request(base(), path, auth(options));
    assert.ok(res.status < 300 && res.json.status === 'success', `${options.method ?? 'GET'} ${path}: ${res.text.slice(0, 300)}`);
    return res.json.data as T;
  }
  return { auth, api };
}

export interface RequestOptions {
  /** false: send no token even to a server spawnServer started (whose printed token is sent by default). */
  auth?: boolean;
  method?: string;
  /** Sent as an application/x-www-form-urlencoded body. */
  form?: Record<string, string | string[]> | [string, string][];
  body?: string | Buffer;
  headers?: Record<string, string>;
}

/** The tokens compiled servers printed in their login URLs, by port: requests to them send it, as a user would. */
const printedTokens = new Map<string, string>();

/** Requests to this port send this token (a server started with the library, whose token the test holds). */
export function useToken(port: number | string, token: string | undefined): void {
  if (token !== undefined) printedTokens.set(String(port), token);
}

/** Reads a start line's login URL: requests to that server then send its token. */
export function rememberPrintedToken(output: string): string | undefined {
  const listening = /assessd listening on (http:\/\/\S+) /.exec(output);
  const login = /log in at (http:\/\/\S+)/.exec(output);
  if (!listening || !login) return undefined;
  const token = new URL(login[1]).searchParams.get('token') ?? undefined;
  useToken(new URL(listening[1]).port, token);
  return token;
}

/** One request over real HTTP, the path sent exactly as given (no client-side normalization). */
export function request(base: string, path: string, options: RequestOptions = {}): Promise<Response> {
  const { hostname, port } = new URL(base);
  let body = options.body;
  const headers: Record<string, string> = { ...options.headers };
  const token = printedTokens.get(port);
  if (token !== undefined && options.auth !== false && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
    headers.authorization = `Bearer ${token}`;
  }
  if (options.form !== undefined) {
    const params = new URLSearchParams();
    const entries = Array.isArray(options.form) ? options.form : Object.entries(options.form);
    for (const [name, value] of entries) for (const v of [value].flat()) params.append(name, v);
    body = params.toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, method: options.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = raw.toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          raw,
          get json() {
            return JSON.parse(text);
          },
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface ChildServer {
  url: string;
  /** The token of the login URL the start line printed (undefined with --no-token). */
  token: string | undefined;
  proc: ChildProcess;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Servers spawned and not yet exited: killed when the test file's process exits (or is told to), so that none outlives it. */
const spawned = new Set<ChildProcess>();
const killSpawned = () => {
  for (const proc of spawned) proc.kill('SIGKILL');
};
process.on('exit', killSpawned);
// a failed assertion skips a test's own kill: at the end of the file, none is left to hold its process open
after(killSpawned);

/** The processes of a process group, with their command lines (arguments split). */
export function processesOfGroup(pgid: number): { pid: number; argv: string[] }[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && readProcStat(Number(entry))?.pgrp === pgid)
    .flatMap((entry) => {
      try {
        return [{ pid: Number(entry), argv: readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean) }];
      } catch {
        return []; // the process ended while being read
      }
    });
}

/**
 * `npm start` on `dir` in a process group of its own, as a terminal runs it, with more of the
 * server's flags (`args`) and variables added to this process's environment (`env`; undefined: unset).
 */
export function npmStart(dir: string, { args = [], env = {} }: { args?: string[]; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  return spawn('npm', ['start', '--', '--port', '0', '--data-dir', dir, ...args], { cwd: PROJECT_ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
}

/** Resolves with what `npm start` printed once it has printed the start-up line; rejects if it exits first. */
export function listening(npm: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let output = '';
    npm.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('assessd listening on ')) resolve(output);
    });
    npm.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)));
  });
}

/** The server `npm start` (`npm`) runs: node on dist/assessd.cjs, in its process group. */
export function serverOfNpmStart(npm: ChildProcess): { pid: number; argv: string[] } | undefined {
  return processesOfGroup(npm.pid!).find(({ argv }) => argv.some((arg) => arg.endsWith(join('dist', 'assessd.cjs'))));
}

/** The node flags `npm start` gives the server (package.json's start script): spawned servers run as users run them. */
export const START_FLAGS: string[] = startFlags(PROJECT_ROOT);

/**
 * Spawns the compiled server (`dist/assessd.cjs`, what `npm start` runs) and waits for its start-up
 * line: with node's flags and environment as `npm start` gives them, or `nodeFlags` (`[]`: as
 * `npx assessd` runs it, in this process's environment); `main`: another copy of the build.
 */
export function spawnServer(args: string[], env: NodeJS.ProcessEnv = {}, nodeFlags: string[] = START_FLAGS, main = join(PROJECT_ROOT, 'dist', 'assessd.cjs')): Promise<ChildServer> {
  const proc = spawn(process.execPath, [...nodeFlags, main, ...args], {
    // this process's environment as it is now (a test may set a variable for a while), with the start
    // script's assignments (glibc's allocator setting) when run as npm start runs it
    env: { ...(nodeFlags === START_FLAGS ? startEnv(PROJECT_ROOT) : process.env), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(proc);
  proc.on('exit', () => spawned.delete(proc));

  let output = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /assessd listening on (http:\/\/\S+) /.exec(output);
      if (!m) return;
      const token = rememberPrintedToken(output);
      resolve({ url: m[1], token, proc, output: () => output, exited });
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening: ${output}`)));
  });
}

/** Runs the CLI to completion: exit code and everything it printed. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'assessd.cjs'), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c));
  proc.stderr.on('data', (c: Buffer) => (stderr += c));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })));
}
