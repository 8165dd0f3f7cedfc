import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { request, startServer } from '../helpers/server.ts';

const REQUESTS = 5000;
const PARALLEL = 16;

/** mulberry32: small, seeded, reproducible. */
function prng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PATHS = [
  '/debug/health', '/api/v1/sessions', '/api/v1/sessions/1', '/api/v1/sessions/1/activate', '/api/v1/sessions/2/add',
  '/api/v1/sessions/2/remove', '/api/v1/sessions/activate', '/api/v1/targets', '/api/v1/targets/1', '/api/v1/configuration',
  '/', '/sessions', '/static/app.js', '/output_files/a/b.txt', '/logs/x', '/api', '/debug',
];
const METHODS = ['GET', 'GET', 'HEAD', 'POST', 'POST', 'PATCH', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'TRACE', 'PROPFIND'];
const SEGMENTS = [
  '0', '1', '2', '3', '-1', '1.5', '9007199254740993', '99999999999999999999999', 'add', 'remove', 'activate', 'frobnicate',
  '..', '%2e%2e', '%2E%2E%2F', '%00', '%0A', '%ff', '%', '%E0%A4%A', '%C3%A9', '%F0%9F%92%A5', 'a%2Fb', '', '_', 'NaN', '0x10', '%20', '~', '%25',
];
const ARG_NAMES = ['name', 'target_url', 'target_id', 'active', 'session_id', 'id', 'limit', 'offset', 'key', 'section', 'dirty', 'scope', 'THREADS', 'SMTP_PORT', 'nope', ''];
const ARG_VALUES = [
  '', 'x', ' padded ', 'default session', '1', '2', '-1', '1.5', 'true', 'no', 'maybe', 'http://a.example/', 'https://10.0.0.1:8443/',
  'javascript:alert(1)', 'ftp://x', 'é', '💥', '\u0000', '%', '%ZZ', 'a'.repeat(300), '9007199254740993',
];
const CONTENT_TYPES = [undefined, 'application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=utf-8', 'application/json', 'multipart/form-data; boundary=x', 'text/plain', ''];

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)];
}

function randomPath(rand: () => number): string {
  const segments = pick(rand, PATHS).split('/').slice(1);
  const mutations = Math.floor(rand() * 3);
  for (let i = 0; i < mutations; i++) {
    const at = Math.floor(rand() * (segments.length + 1));
    const kind = rand();
    if (kind < 0.4) segments[Math.min(at, segments.length - 1)] = pick(rand, SEGMENTS);
    else if (kind < 0.6) segments.splice(at, 0, pick(rand, SEGMENTS));
    else if (kind < 0.75) segments.splice(at, 0, segments[Math.min(at, segments.length - 1)] ?? ''); // doubled
    else if (kind < 0.9) segments[Math.min(at, segments.length - 1)] = encodeURIComponent(segments[Math.min(at, segments.length - 1)] ?? '');
    else segments.splice(at, 1);
  }
  let path = '/' + segments.join('/');
  if (rand() < 0.3) path += '/';
  if (rand() < 0.3) path += '?' + randomForm(rand);
  return path;
}

function randomForm(rand: () => number): string {
  const parts: string[] = [];
  const n = Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) {
    const name = pick(rand, ARG_NAMES);
    const value = pick(rand, ARG_VALUES);
    parts.push(rand() < 0.8 ? `${encodeURIComponent(name)}=${encodeURIComponent(value)}` : `${name}=${value.replace(/[^\x21-\x7e]/g, '')}`);
  }
  return parts.join('&');
}

interface Answer {
  status: number;
  type: string | undefined;
  body: string;
}

function send(agent: Agent, port: number, method: string, path: string, body: string | undefined, contentType: string | undefined): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    if (contentType !== undefined) headers['content-type'] = contentType;
    let req;
    try {
      req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: text }));
      });
    } catch {
      return resolve(undefined); // a request Node's client refuses to send
    }
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

test(`${REQUESTS} seeded random requests: no 5xx, every /api and /debug answer a JSON envelope, the store reloads`, async () => {
  const seed = Number(process.env.FUZZ_SEED ?? 20261121);
  const rand = prng(seed);
  const server = await startServer();
  const agent = new Agent({ keepAlive: true, maxSockets: PARALLEL });
  const problems: string[] = [];
  let answered = 0;
  try {
    for (let done = 0; done < REQUESTS; done += PARALLEL) {
      const batch = Array.from({ length: PARALLEL }, async () => {
        const method = pick(rand, METHODS);
        const path = randomPath(rand);
        const body = rand() < 0.5 ? randomForm(rand) : undefined;
        const contentType = body === undefined ? undefined : pick(rand, CONTENT_TYPES);
        const answer = await send(agent, server.port, method, path, body, contentType);
        if (!answer) return;
        answered++;
        const where = `${method} ${path} [${contentType}] ${body ?? ''} -> ${answer.status}`;
        if (answer.status >= 500) problems.push(`5xx: ${where} ${answer.body}`);
        if (/^\/(api|debug)(\/|$|\?)/.test(path) && method !== 'HEAD') {
          if (answer.type !== 'application/json; charset=utf-8') problems.push(`not JSON: ${where}`);
          try {
            const json = JSON.parse(answer.body);
            const ok = json.status === 'success' ? 'data' in json : json.status === 'fail' && json.code === answer.status && typeof json.message === 'string';
            if (!ok) problems.push(`not an envelope: ${where} ${answer.body}`);
          } catch {
            problems.push(`unparseable: ${where} ${answer.body.slice(0, 200)}`);
          }
        }
        if (/\bat .+\.(ts|js):\d+/.test(answer.body)) problems.push(`stack trace: ${where}`);
      });
      await Promise.all(batch);
    }
    assert.deepEqual(problems.slice(0, 20), [], `seed ${seed}`);
    assert.ok(answered > REQUESTS * 0.95, `only ${answered} requests were answered`);
    assert.equal((await request(server.url, '/debug/health')).status, 200);
  } finally {
    agent.destroy();
    await server.stop();
  }
  const reopened = await startServer({ dataDir: server.dataDir });
  try {
    const sessions = (await request(reopened.url, '/api/v1/sessions/')).json.data as { active: boolean }[];
    assert.equal(sessions.filter((s) => s.active).length, 1);
  } finally {
    await reopened.close();
  }
});
