/** The server's HTTP API: JSend envelopes in, typed data or an ApiError out. */

export interface Session {
  id: number;
  name: string;
  active: boolean;
}

export interface Target {
  id: number;
  target_url: string;
  host_name: string;
  host_ip: string;
  port_number: string;
  url_scheme: string;
  host_path: string;
  top_domain: string;
}

export interface ConfigItem {
  key: string;
  value: string;
  section: string;
  descrip: string;
  dirty: boolean;
}

/** A refused or failed call; status 0 means the server did not answer at all. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly data: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The server's 400 messages for a reference to what is no longer there (deleted in another tab, or by another client). */
const GONE = { session: 'Invalid session id provided', target: 'Invalid target reference provided', output: 'Invalid plugin output reference provided', transaction: 'Invalid transaction referenced' } as const;

/** `err` is the server saying that one of `what` the request named is no longer there. */
export function isGone(err: unknown, ...what: (keyof typeof GONE)[]): boolean {
  return err instanceof ApiError && err.status === 400 && what.some((w) => GONE[w] === err.message);
}

/** A session with its number of targets (`GET /api/v1/overview/sessions`). */
export interface SessionSummary extends Session {
  target_count: number;
}

/** A target with the ids of the sessions that hold it (`include=sessions`). */
export interface ListedTarget extends Target {
  session_ids: number[];
}

export type TargetSort = 'newest' | 'host';

export interface TargetPageQuery {
  /** Absent: the active session. */
  session?: number;
  q?: string;
  sort?: TargetSort;
  limit: number;
  offset: number;
}

export interface TargetPage {
  targets: ListedTarget[];
  /** Matches before paging (the X-Total-Count header). */
  total: number;
}

export interface AddSummary {
  session_id: number;
  added: number;
  created: number;
  failed: { index: number; target_url: string; reason: string }[];
}

/** Which targets a bulk change applies to: these ids, or every target of a session that matches a search. */
export type BulkSelection = { ids: number[] } | { session: number; q: string };

export interface BulkSummary {
  matched: number;
  changed: number;
  deleted: number;
  missing: number[];
}

/** A plugin of the catalogue (`GET /api/v1/plugins/`). */
export interface Plugin {
  key: string;
  code: string;
  group: string;
  type: string;
  name: string;
  title: string;
  descrip: string;
}

/** A queued run. */
export interface Work {
  id: number;
  active: boolean;
  target: Target;
  plugin: Plugin;
}

export interface WorkPage {
  records_total: number;
  records_filtered: number;
  data: Work[];
}

export interface WorkQuery {
  limit: number;
  offset: number;
  target_url?: string;
  plugin_code?: string;
}

export interface Worker {
  id: number;
  name: string;
  busy: boolean;
  paused: boolean;
  /** `[]`, or what it runs: `[target, plugin]`. */
  work: [Target, Plugin] | [];
  /** `"NA"`, or when the run began in the server's local time: `2026/11/24 18:09:17`. */
  start_time: string;
  worker: number | null;
  /** Asked for with include=started_at: when the run began, ISO 8601. */
  started_at?: string | null;
}

export interface Finding {
  rank: number;
  title: string;
  detail: string;
  /** The ids of the target's transactions that show it (a grep plugin's matches, a built-in check's requests), at most 100. */
  transactions?: number[];
  /** How many show it, when more than `transactions` lists. */
  transactions_total?: number;
}

/** A transaction as a list shows it (no raw fields). */
export interface TransactionSummary {
  id: number;
  target_id: number;
  url: string;
  method: string;
  data: string;
  response_status: string;
  response_size: number;
  binary_response: boolean;
  time: number;
  time_human: string;
  local_timestamp: string;
  scope: boolean;
  session_tokens: string;
  source: string;
  started_at: string;
  response_body_truncated?: boolean;
  request_body_truncated?: boolean;
  /** With request_body_truncated: the bytes of the request body as sent. */
  request_size?: number;
  /** No answer: what failed (or, for a record damaged on disk, that it is). */
  error?: string;
  /** An https target's certificate not trusted, or naming another host. */
  tls_problem?: string;
  /** The proxy sent the request this many times more. */
  resent?: number;
}

/** One transaction with its raw fields. */
export interface Transaction extends TransactionSummary {
  raw_request: string;
  response_headers: string;
  response_body: string;
}

export interface TransactionPage {
  records_total: number;
  records_filtered: number;
  /** False when the search stopped once its page was full: `records_filtered` is then a lower bound. */
  records_filtered_exact?: boolean;
  timed_out?: boolean;
  data: TransactionSummary[];
  /** The target's highest transaction id when the search began: the next look asks after it. */
  last_id: number;
}

export interface TransactionQuery {
  q?: string;
  limit: number;
  offset: number;
  afterId?: number;
}

/** What may change of a request sent again (only what the tester changed is sent). */
export interface ReplayEdits {
  method?: string;
  url?: string;
  headers?: string;
  body?: string;
}

export const CODE_LANGUAGES = ['bash', 'python', 'php', 'ruby', 'fetch', 'raw'] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

export interface UrlRow {
  url: string;
  visited: boolean;
  scope: boolean;
  kind: string;
}

export interface UrlPage {
  records_total: number;
  records_filtered: number;
  data: UrlRow[];
}

export interface UrlQuery {
  url?: string;
  kind?: string;
  limit: number;
  offset: number;
}

export interface HarImport {
  imported: number;
  out_of_scope: number;
  skipped: number;
}

export type OutputStatus = 'Running' | 'Successful' | 'Aborted' | 'Crashed' | 'Skipped';

/** A plugin's output on a target, without its text. */
export interface Output {
  id: number;
  target_id: number;
  plugin_key: string;
  plugin_code: string;
  plugin_group: string;
  plugin_type: string;
  status: OutputStatus;
  owtf_rank: number;
  user_rank: number;
  user_notes: string;
  output_path: string;
  error: string | null;
  findings: Finding[];
  exit_code: number | null;
  run_time: string | null;
  started_at: string;
  ended_at: string | null;
}

/** A file a run left in its output directory. */
export interface OutputFile {
  /** Its path under the output directory (`/` between directories). */
  name: string;
  size: number;
  modified: string;
}

type OutputRef = Pick<Output, 'target_id' | 'plugin_group' | 'plugin_type' | 'plugin_code'>;

/** The address of an output's files (`.../files/`), or of one of them: served as text or a download, never as a page. */
export function outputFileUrl(o: OutputRef, name = ''): string {
  return `/api/v1/targets/${o.target_id}/poutput/${o.plugin_group}/${o.plugin_type}/${encodeURIComponent(o.plugin_code)}/files/${name.split('/').map(encodeURIComponent).join('/')}`;
}

export interface TestGroup {
  code: string;
  priority: number;
  descrip: string;
  hint: string;
  url: string;
}

/** `GET .../poutput/names`: by code, each with its test group. */
export type OutputsByCode = Record<string, { data: Output[]; details: TestGroup }>;

export interface Progress {
  complete_count: number;
  left_count: number;
}

export interface SeverityCount {
  id: number;
  label: string;
  value: number;
}

export interface QueueRequest {
  ids: number[];
  group?: string;
  type?: string;
  codes?: string[];
  force: boolean;
}

type Params = URLSearchParams | Record<string, string>;

interface Answer<T> {
  data: T;
  headers: Headers;
}

let onUnreachable: () => void = () => {};
let onUnauthenticated: () => void = () => {};

/** Called whenever a request gets no answer, so the health monitor can look at once. */
export function setUnreachableHandler(handler: () => void): void {
  onUnreachable = handler;
}

/** Called whenever the server wants its token (401), so the page can ask for it. */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

export function isAbort(err: unknown): boolean {
  return err instanceof DOMException && err.name === 'AbortError';
}

/** What a request carries: form arguments, or a file (a session bundle) sent as it is. */
type Body = Params | { file: Blob; type: string };

/** Every request of the page goes through here: one place to see, count or authenticate them. */
async function request(method: string, path: string, body?: Body, signal?: AbortSignal): Promise<Response> {
  const file = body !== undefined && 'file' in body && body.file instanceof Blob ? body : undefined;
  try {
    return await fetch(path, {
      method,
      headers: file ? { Accept: 'application/json', 'Content-Type': file.type } : { Accept: 'application/json' },
      body: file ? file.file : body === undefined ? undefined : new URLSearchParams(body as Params),
      cache: 'no-store',
      signal,
    });
  } catch (err) {
    if (isAbort(err)) throw err;
    onUnreachable();
    throw new ApiError(0, 'The server did not answer.');
  }
}

/** A refusal's JSend envelope as an ApiError (and a 401 asks for the token). */
async function refusal(method: string, path: string, res: Response): Promise<ApiError> {
  let body: { message?: string; data?: unknown } = {};
  try {
    body = await res.json();
  } catch (err) {
    if (isAbort(err)) throw err;
    return new ApiError(res.status, `Unexpected answer from the server (HTTP ${res.status}).`);
  }
  // a refused login or logout is answered where it was asked; any other 401 asks for the token
  if (res.status === 401 && !(path === AUTH && method !== 'GET')) onUnauthenticated();
  const data = body.data && typeof body.data === 'object' ? (body.data as Record<string, string>) : {};
  return new ApiError(res.status, body.message ?? `HTTP ${res.status}`, data);
}

async function call<T>(method: string, path: string, body?: Body, signal?: AbortSignal): Promise<Answer<T>> {
  const res = await request(method, path, body, signal);
  if (!res.ok) throw await refusal(method, path, res);
  let envelope: { status?: string; data?: unknown };
  try {
    envelope = await res.json();
  } catch (err) {
    if (isAbort(err)) throw err;
    throw new ApiError(res.status, `Unexpected answer from the server (HTTP ${res.status}).`);
  }
  if (envelope.status !== 'success') throw new ApiError(res.status, `Unexpected answer from the server (HTTP ${res.status}).`);
  return { data: envelope.data as T, headers: res.headers };
}

async function send<T>(method: string, path: string, body?: Body, signal?: AbortSignal): Promise<T> {
  return (await call<T>(method, path, body, signal)).data;
}

const get = <T>(path: string, signal?: AbortSignal) => send<T>('GET', path, undefined, signal);

function selectionParams(params: URLSearchParams, selection: BulkSelection): URLSearchParams {
  if ('ids' in selection) for (const id of selection.ids) params.append('target_id', String(id));
  else {
    params.set('filter_session_id', String(selection.session));
    if (selection.q) params.set('q', selection.q);
  }
  return params;
}

/** GET /api/v1/proxy: `enabled` false under --no-proxy. */
export type ProxyInfo =
  | { enabled: false }
  | {
      enabled: true;
      host: string;
      port: number;
      url: string;
      needs_token: boolean;
      ca: { fingerprint256: string; subject: string; url: string };
      counts: { requests: number; recorded: number; dropped: number; unrecorded: number; intercepted: number; tunnels: number; upstreamErrors: number; refused: number };
    };

const AUTH = '/api/v1/auth';
type AuthStatus = { token_required: boolean };

export const api = {
  health: (signal?: AbortSignal) => get<{ status: string }>('/debug/health', signal),
  /** Where the intercepting proxy listens, its CA's fingerprint, what it forwarded. */
  proxy: (signal?: AbortSignal) => get<ProxyInfo>('/api/v1/proxy', signal),
  /** The proxy's CA certificate (a download). */
  proxyCaUrl: '/api/v1/proxy/ca.pem',

  authStatus: () => get<AuthStatus>(AUTH),
  /** Exchanges the token for the login cookie. */
  login: (token: string) => send<AuthStatus>('POST', AUTH, { token }),
  logout: () => send<AuthStatus>('DELETE', AUTH),

  /** Every session with its target count, in id order: one request whatever their number. */
  overview: (signal?: AbortSignal) => get<SessionSummary[]>('/api/v1/overview/sessions', signal),
  activeSessions: (signal?: AbortSignal) => get<Session[]>('/api/v1/sessions/?active=true', signal),
  createSession: (name: string) => send<object>('POST', '/api/v1/sessions/', { name }),
  activateSession: (id: number) => send<object>('PATCH', `/api/v1/sessions/${id}/activate`),
  deleteSession: (id: number) => send<object>('DELETE', `/api/v1/sessions/${id}`),
  detachTarget: (sessionId: number, targetId: number) =>
    send<object>('PATCH', `/api/v1/sessions/${sessionId}/remove`, { target_id: String(targetId) }),

  /** One page of a session's targets, each with the sessions that hold it, and the number of matches. */
  async targetPage(query: TargetPageQuery, signal?: AbortSignal): Promise<TargetPage> {
    const params = new URLSearchParams({ include: 'sessions', limit: String(query.limit), offset: String(query.offset) });
    if (query.session !== undefined) params.set('session_id', String(query.session));
    if (query.q) params.set('q', query.q);
    if (query.sort && query.sort !== 'newest') params.set('sort', query.sort);
    const answer = await call<ListedTarget[]>('GET', `/api/v1/targets/?${params}`, undefined, signal);
    return { targets: answer.data, total: Number(answer.headers.get('X-Total-Count') ?? answer.data.length) };
  },
  /** Adds what it can of the list to the session; the answer says why each other line was refused. */
  addTargets: (sessionId: number, urls: string[], signal?: AbortSignal) =>
    send<AddSummary>('POST', '/api/v1/targets/bulk', new URLSearchParams([['action', 'add'], ['session_id', String(sessionId)], ...urls.map((u) => ['target_url', u])]), signal),
  deleteTargets: (selection: BulkSelection) =>
    send<BulkSummary>('POST', '/api/v1/targets/bulk', selectionParams(new URLSearchParams({ action: 'delete' }), selection)),
  attachTargets: (sessionId: number, selection: BulkSelection) =>
    send<BulkSummary>('POST', '/api/v1/targets/bulk', selectionParams(new URLSearchParams({ action: 'attach', session_id: String(sessionId) }), selection)),
  detachTargets: (sessionId: number, selection: BulkSelection) =>
    send<BulkSummary>('POST', '/api/v1/targets/bulk', selectionParams(new URLSearchParams({ action: 'detach', session_id: String(sessionId) }), selection)),
  deleteTarget: (id: number) => send<object>('DELETE', `/api/v1/targets/${id}`),

  /** A session as a file (Content-Disposition: attachment): a link downloads it. */
  bundleUrl: (sessionId: number) => `/api/v1/bundles/${sessionId}`,
  /** A session's self-contained HTML report. */
  reportUrl: (sessionId: number) => `/api/v1/reports/${sessionId}`,
  /** A session's target URLs, one a line (format=text). */
  async targetsText(sessionId: number): Promise<string> {
    const path = `/api/v1/targets/?session_id=${sessionId}&format=text`;
    const res = await request('GET', path);
    if (!res.ok) throw await refusal('GET', path, res);
    return res.text();
  },
  /** A session bundle imported as a new session (named `name`, or as the bundle says): all or nothing. */
  importBundle: (file: Blob, name?: string) =>
    send<{ id: number; targets: number }>('POST', `/api/v1/bundles/${name ? `?name=${encodeURIComponent(name)}` : ''}`, { file, type: 'application/json' }),

  /** The plugin catalogue (about a hundred), by group, type, then the guide's order. */
  plugins: (signal?: AbortSignal) => get<Plugin[]>('/api/v1/plugins/', signal),
  /** Queues the plugins of one group and type (all, or these codes) on the targets. */
  queueWorks(q: QueueRequest): Promise<{ queued: number; skipped: number; message?: string }> {
    const params = new URLSearchParams({ id: q.ids.join(','), force_overwrite: String(q.force) });
    if (q.group) params.set('group', q.group);
    if (q.type) params.set('type', q.type);
    for (const code of q.codes ?? []) params.append('code', code);
    // details=true: the answer says what was skipped too
    return send('POST', '/api/v1/worklist/?details=true', params);
  },
  /** A page of the worklist, with its totals. */
  worklistPage(query: WorkQuery, signal?: AbortSignal): Promise<WorkPage> {
    const params = new URLSearchParams({ limit: String(query.limit), offset: String(query.offset) });
    if (query.target_url) params.set('target_url', query.target_url);
    if (query.plugin_code) params.set('plugin_code', query.plugin_code);
    return get<WorkPage>(`/api/v1/worklist/search?${params}`, signal);
  },
  /** `id` 0: every work. */
  setWorkActive: (id: number, active: boolean) => send<object>('PATCH', `/api/v1/worklist/${id}/${active ? 'resume' : 'pause'}`),
  /** `id` 0: every queued work. */
  deleteWork: (id: number) => send<object>('DELETE', `/api/v1/worklist/${id}`),

  workers: (signal?: AbortSignal) => get<Worker[]>('/api/v1/workers/?include=started_at', signal),
  addWorker: () => send<object>('POST', '/api/v1/workers/'),
  removeWorker: (id: number) => send<object>('DELETE', `/api/v1/workers/${id}`),
  /** `id` 0: every worker. */
  workerAction: (id: number, action: 'pause' | 'resume' | 'abort') => send<object>('PATCH', `/api/v1/workers/${id}/${action}`),
  progress: (signal?: AbortSignal) => get<Progress>('/api/v1/plugins/progress', signal),
  /** The active session's outputs by effective rank, critical first. */
  severity: async (signal?: AbortSignal) => (await get<{ data: SeverityCount[] }>('/api/v1/dashboard/severitypanel', signal)).data,

  target: (id: number, signal?: AbortSignal) => get<Target>(`/api/v1/targets/${id}`, signal),
  /** Every target of a session matching a search, for the ids a queue needs (one request). */
  targetsOf: (session: number | undefined, q: string | undefined, signal?: AbortSignal) => {
    const params = new URLSearchParams();
    if (session !== undefined) params.set('session_id', String(session));
    if (q) params.set('q', q);
    return get<Target[]>(`/api/v1/targets/?${params}`, signal);
  },
  outputs: (targetId: number, signal?: AbortSignal) => get<OutputsByCode>(`/api/v1/targets/${targetId}/poutput/names`, signal),
  /** One output with its text. */
  outputText: async (o: Pick<Output, 'target_id' | 'plugin_group' | 'plugin_type' | 'plugin_code'>, signal?: AbortSignal) => {
    const [found] = await get<(Output & { output: string })[]>(`/api/v1/targets/${o.target_id}/poutput/${o.plugin_group}/${o.plugin_type}/${encodeURIComponent(o.plugin_code)}`, signal);
    return found?.output ?? '';
  },
  outputFiles: (o: OutputRef, signal?: AbortSignal) => get<OutputFile[]>(outputFileUrl(o), signal),
  /** Sets what was changed of the tester's rank and notes, and only that: another tab's change to the other stays. */
  rankOutput: (o: Pick<Output, 'target_id' | 'plugin_group' | 'plugin_type' | 'plugin_code'>, changes: { rank?: number; notes?: string }) =>
    send<object>('PATCH', `/api/v1/targets/${o.target_id}/poutput/${o.plugin_group}/${o.plugin_type}/${encodeURIComponent(o.plugin_code)}`, {
      ...(changes.rank === undefined ? {} : { user_rank: String(changes.rank) }),
      ...(changes.notes === undefined ? {} : { user_notes: changes.notes }),
    }),

  /** A page of a target's transactions, newest first, without raw fields; `afterId`: only those newer. */
  transactionPage(target: number, query: TransactionQuery, signal?: AbortSignal): Promise<TransactionPage> {
    // exact=false: a page that reads bodies stops once it is full (the count then says "At least")
    const params = new URLSearchParams({ raw: 'false', order: 'newest', exact: 'false', limit: String(query.limit), offset: String(query.offset) });
    if (query.q) params.set('q', query.q);
    if (query.afterId !== undefined) params.set('after_id', String(query.afterId));
    return get<TransactionPage>(`/api/v1/targets/${target}/transactions/search/?${params}`, signal);
  },
  /** One transaction; its body cut at `maxBody` bytes. */
  transaction: (target: number, id: number, maxBody: number, signal?: AbortSignal) =>
    get<Transaction>(`/api/v1/targets/${target}/transactions/${id}?max_body=${maxBody}`, signal),
  /** The response body as bytes (a download; an image shows as an image). */
  bodyUrl: (target: number, id: number) => `/api/v1/targets/${target}/transactions/${id}/body`,
  /** The transactions a filter finds, as a HAR download. */
  harUrl: (target: number, q: string) => `/api/v1/targets/${target}/transactions/har${q ? `?q=${encodeURIComponent(q)}` : ''}`,
  /** The request as code that sends it again (bare text). */
  async requestAsCode(target: number, id: number, language: CodeLanguage, signal?: AbortSignal): Promise<string> {
    const path = `/api/v1/targets/${target}/transactions/hrt/${id}/`;
    const res = await request('POST', path, { language }, signal);
    if (!res.ok) throw await refusal('POST', path, res);
    return res.text();
  },
  /** Sends the request again, as recorded but for `edits`; answers the new transaction. */
  replay: (target: number, id: number, edits: ReplayEdits, signal?: AbortSignal) =>
    send<Transaction>('POST', `/api/v1/targets/${target}/transactions/${id}/replay`, Object.fromEntries(Object.entries(edits).filter(([, v]) => v !== undefined)) as Record<string, string>, signal),
  /** Imports a HAR file, telling `progress` how much of it was sent (XHR: fetch says nothing of an upload). */
  importHar(target: number, file: Blob, progress: (sent: number, total: number) => void): { done: Promise<HarImport>; abort: () => void } {
    const xhr = new XMLHttpRequest();
    const path = `/api/v1/targets/${target}/transactions/`;
    const done = new Promise<HarImport>((resolve, reject) => {
      xhr.upload.addEventListener('progress', (e) => progress(e.loaded, e.lengthComputable ? e.total : file.size));
      xhr.addEventListener('load', () => {
        let body: { status?: string; message?: string; data?: unknown } = {};
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          return reject(new ApiError(xhr.status, `Unexpected answer from the server (HTTP ${xhr.status}).`));
        }
        if (xhr.status === 401) onUnauthenticated();
        if (xhr.status >= 200 && xhr.status < 300 && body.status === 'success') return resolve(body.data as HarImport);
        reject(new ApiError(xhr.status, body.message ?? `HTTP ${xhr.status}`, (body.data && typeof body.data === 'object' ? body.data : {}) as Record<string, string>));
      });
      xhr.addEventListener('error', () => {
        onUnreachable();
        reject(new ApiError(0, 'The server did not answer.'));
      });
      xhr.addEventListener('abort', () => reject(new DOMException('The import was cancelled', 'AbortError')));
    });
    xhr.open('POST', path);
    xhr.setRequestHeader('Content-Type', 'application/json');
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.send(file);
    return { done, abort: () => xhr.abort() };
  },
  /** A page of the URLs seen in a target's transactions. */
  urlPage(target: number, query: UrlQuery, signal?: AbortSignal): Promise<UrlPage> {
    const params = new URLSearchParams({ limit: String(query.limit), offset: String(query.offset) });
    if (query.url) params.set('url', query.url);
    if (query.kind) params.set('kind', query.kind);
    return get<UrlPage>(`/api/v1/targets/${target}/urls/search/?${params}`, signal);
  },

  configuration: (signal?: AbortSignal) => get<ConfigItem[]>('/api/v1/configuration', signal),
  /** All or nothing: one unknown key and nothing changes (400, `data` names the keys). */
  patchConfiguration: (changes: Map<string, string>) => send<object>('PATCH', '/api/v1/configuration/', new URLSearchParams([...changes])),
};
