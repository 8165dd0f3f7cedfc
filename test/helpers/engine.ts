/**
 * Black-box helpers for the assessment engine's API: requests that must succeed, waiting for a
 * state with a bounded poll, user plugin files, small programs standing in for the tools, and
 * what /proc says of a process.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { readProcStat } from '../../src/engine/proc.ts';
import { assertFail, assertSuccess } from './jsend.ts';
import { request, tempDir, type RequestOptions, type Response, type TestServer } from './server.ts';

export { assertFail, assertSuccess };

type Form = RequestOptions['form'];

/** A server (test or child) by its URL, and headers every request carries (a bearer token). */
export interface Api {
  url: string;
  headers?: Record<string, string>;
}

export function send(api: Api, method: string, path: string, form?: Form): Promise<Response> {
  return request(api.url, path, { method, form, headers: api.headers });
}

/** The `data` of a GET that must answer 200. */
export async function get(api: Api, path: string): Promise<any> {
  return assertSuccess(await send(api, 'GET', path), 200, `GET ${path}`);
}

/** A write that must succeed with `status`; answers its data. */
export async function ok(api: Api, method: string, path: string, form?: Form, status = method === 'POST' ? 201 : 200): Promise<any> {
  return assertSuccess(await send(api, method, path, form), status, `${method} ${path}`);
}

/** Adds target URLs to the active session; answers their ids, in the order given. */
export async function addTargets(api: Api, ...urls: string[]): Promise<number[]> {
  await ok(api, 'POST', '/api/v1/targets/', { target_url: urls });
  const all: { id: number; target_url: string }[] = await get(api, '/api/v1/targets/');
  return urls.map((url) => {
    const found = all.find((t) => t.target_url === url || t.target_url === new URL(url).href);
    assert.ok(found, `target ${url} was not created: ${JSON.stringify(all.map((t) => t.target_url))}`);
    return found.id;
  });
}

export async function addTarget(api: Api, url: string): Promise<number> {
  return (await addTargets(api, url))[0]!;
}

/** POST /worklist/ that must answer 201; answers `queued`. */
export async function queue(api: Api, form: Form): Promise<number> {
  const data = await ok(api, 'POST', '/api/v1/worklist/', form, 201);
  return data.queued;
}

/** Polls `probe` until it answers something truthy, for at most `timeoutMs`; throws saying `what`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false | null>, timeoutMs = 10_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const value = await probe();
    if (value) return value;
    last = value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await delay(everyMs);
  }
}

export interface Output {
  id: number;
  target_id: number;
  plugin_key: string;
  plugin_code: string;
  plugin_group: string;
  plugin_type: string;
  status: string;
  owtf_rank: number;
  user_rank: number;
  user_notes: string;
  output_path: string;
  start_time: string;
  end_time: string | null;
  run_time: string | null;
  error: string | null;
  findings: { rank: number; title: string; detail: string; transactions?: number[]; transactions_total?: number }[];
  exit_code: number | null;
  started_at: string;
  ended_at: string | null;
  output?: string;
}

export async function outputs(api: Api, targetId: number, query = ''): Promise<Output[]> {
  return get(api, `/api/v1/targets/${targetId}/poutput/${query}`);
}

/** The output of `key` on the target once its status is one of `statuses` (default: any but Running). */
export async function waitForOutput(api: Api, targetId: number, key: string, statuses?: string[], timeoutMs = 10_000): Promise<Output> {
  return waitFor(`${key} on target ${targetId} to be ${statuses?.join('|') ?? 'done'}`, async () => {
    const found = (await outputs(api, targetId)).find((o) => o.plugin_key === key);
    if (!found) return undefined;
    return (statuses ? statuses.includes(found.status) : found.status !== 'Running') ? found : undefined;
  }, timeoutMs);
}

export interface Worker {
  id: number;
  name: string;
  busy: boolean;
  paused: boolean;
  work: unknown[];
  start_time: string;
  worker: number | null;
}

export async function workers(api: Api): Promise<Worker[]> {
  return get(api, '/api/v1/workers/');
}

/** The busy worker running `key` once its program has a pid. */
export async function waitForProgram(api: Api, key: string, timeoutMs = 10_000): Promise<Worker & { worker: number }> {
  return waitFor(`a worker running ${key} with a pid`, async () => {
    const found = (await workers(api)).find((w) => w.busy && (w.work[1] as { key?: string } | undefined)?.key === key && w.worker !== null);
    return found as (Worker & { worker: number }) | undefined;
  }, timeoutMs);
}

/** Sets configuration items (tool paths) through the API. */
export async function configure(api: Api, items: Record<string, string>): Promise<void> {
  await ok(api, 'PATCH', '/api/v1/configuration/', items);
}

export interface TestGroupSpec {
  code: string;
  group?: string;
  priority?: number;
  descrip?: string;
  hint?: string;
  url?: string;
  mappings?: Record<string, [string, string]>;
}

/**
 * Writes DATA_DIR/plugins/<name> (before startServer): plugins and their test groups, the fields
 * every plugin and test group needs filled in when a test leaves them out (a string is written as it is).
 */
export async function writePluginFile(dataDir: string, name: string, doc: { plugins?: object[]; test_groups?: TestGroupSpec[] } | string): Promise<string> {
  const dir = join(dataDir, 'plugins');
  await mkdir(dir, { recursive: true });
  const file = join(dir, name);
  const groups = typeof doc === 'string' ? undefined : doc.test_groups?.map((g) => ({ group: 'web', priority: 50, descrip: `Test group ${g.code}`, hint: 'a hint', url: 'https://example.org/guide', mappings: {}, ...g }));
  const plugins = typeof doc === 'string' ? undefined : doc.plugins?.map((p) => {
    const { code, type } = p as { code?: string; type?: string };
    return { name: `Plugin_${code}_${type}`, title: `Plugin ${code} ${type}`, descrip: `A test plugin (${type} of ${code})`, ...p };
  });
  await writeFile(file, typeof doc === 'string' ? doc : JSON.stringify({ ...doc, ...(groups ? { test_groups: groups } : {}), ...(plugins ? { plugins } : {}) }, null, 1));
  return file;
}

/** A program plugin of the test group `code` (web/active) run with `tool`'s configured value. */
export function toolPlugin(code: string, tool: string, argv: string[], extra: object = {}): object {
  return { code, group: 'web', type: 'active', name: `Tool_${code.replace(/-/g, '_')}`, title: `Tool ${code}`, descrip: `Runs ${tool}`, tool, argv, ...extra };
}

/** Writes an executable `#!/bin/sh` script. */
export async function script(dir: string, name: string, body: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

/** A fresh directory for scripts. */
export function scriptDir(): Promise<string> {
  return tempDir('assessd-tools-');
}

/** `/proc/<pid>/stat`: state (R, S, T, Z...) and process group; undefined when the process is gone. */
export async function procStat(pid: number): Promise<{ state: string; pgrp: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'latin1');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/**
 * Whether the process group `pgrp` is stopped: it has a living member, and every member is stopped
 * (T), or waits uninterruptibly (D) on a child of the group that is: a shell that started its
 * command with vfork, whose child SIGSTOP caught before it could exec (dash does this), stays D,
 * never T, until the group is continued.
 */
export function groupStopped(pgrp: number): boolean {
  const states = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const stat = readProcStat(Number(name));
    if (stat && stat.pgrp === pgrp && stat.state !== 'Z') states.set(Number(name), stat.state);
  }
  const stopped = (state: string | undefined) => state === 'T' || state === 't';
  const childrenOf = (pid: number) => readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
  return (
    states.size > 0 &&
    [...states].every(([pid, state]) => {
      if (stopped(state)) return true;
      if (state !== 'D') return false;
      try {
        return childrenOf(pid).some((child) => stopped(states.get(child)));
      } catch {
        return false;
      }
    })
  );
}

/** Whether a process exists and is not a zombie. */
export async function alive(pid: number): Promise<boolean> {
  const stat = await procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Whether any process of group `pgrp` is alive (not a zombie). */
export async function groupAlive(pgrp: number): Promise<boolean> {
  try {
    process.kill(-pgrp, 0);
  } catch {
    return false;
  }
  // a zombie leader answers kill(0) too: look for a living member
  const { readdir } = await import('node:fs/promises');
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const stat = await procStat(Number(name));
    if (stat && stat.pgrp === pgrp && stat.state !== 'Z') return true;
  }
  return false;
}

/** The seven built-in checks: plugin code, check name. */
export const SEMI_PASSIVE = {
  'OWTF-IG-001': 'robots',
  'OWTF-IG-004': 'banners',
  'OWTF-CM-001': 'tls',
  'OWTF-CM-008': 'http-methods',
  'OWTF-SM-002': 'cookies',
  'OWTF-WGP-001': 'framing',
  'OWTF-WGP-002': 'cors',
} as const;

export const RANK_LABELS = [
  { id: 5, label: 'Critical' },
  { id: 4, label: 'High' },
  { id: 3, label: 'Medium' },
  { id: 2, label: 'Low' },
  { id: 1, label: 'Info' },
  { id: 0, label: 'Passing' },
];

/** The severity panel's data for counts by rank `{5: n, ...}` (absent ranks 0). */
export function severity(counts: Partial<Record<number, number>>): { data: { id: number; label: string; value: number }[] } {
  return { data: RANK_LABELS.map(({ id, label }) => ({ id, label, value: counts[id] ?? 0 })) };
}

/** Stops the server unless a test already did. */
export async function closeQuietly(server: TestServer | undefined): Promise<void> {
  await server?.close().catch(() => {});
}
