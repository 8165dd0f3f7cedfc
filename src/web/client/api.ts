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

type Params = URLSearchParams | Record<string, string>;

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

async function call<T>(method: string, path: string, params?: Params, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { Accept: 'application/json' },
      body: params === undefined ? undefined : new URLSearchParams(params),
      cache: 'no-store',
      signal,
    });
  } catch (err) {
    if (isAbort(err)) throw err;
    onUnreachable();
    throw new ApiError(0, 'The server did not answer.');
  }
  let body: { status?: string; data?: unknown; message?: string };
  try {
    body = await res.json();
  } catch (err) {
    if (isAbort(err)) throw err;
    throw new ApiError(res.status, `Unexpected answer from the server (HTTP ${res.status}).`);
  }
  if (res.ok && body.status === 'success') return body.data as T;
  // a refused login or logout is answered where it was asked; any other 401 asks for the token
  if (res.status === 401 && !(path === AUTH && method !== 'GET')) onUnauthenticated();
  const data = body.data && typeof body.data === 'object' ? (body.data as Record<string, string>) : {};
  throw new ApiError(res.status, body.message ?? `HTTP ${res.status}`, data);
}

const get = <T>(path: string, signal?: AbortSignal) => call<T>('GET', path, undefined, signal);
const AUTH = '/api/v1/auth';
type AuthStatus = { token_required: boolean };

export const api = {
  health: (signal?: AbortSignal) => get<{ status: string }>('/debug/health', signal),

  authStatus: () => get<AuthStatus>(AUTH),
  /** Exchanges the token for the login cookie. */
  login: (token: string) => call<AuthStatus>('POST', AUTH, { token }),
  logout: () => call<AuthStatus>('DELETE', AUTH),

  sessions: (signal?: AbortSignal) => get<Session[]>('/api/v1/sessions/', signal),
  createSession: (name: string) => call<object>('POST', '/api/v1/sessions/', { name }),
  activateSession: (id: number) => call<object>('PATCH', `/api/v1/sessions/${id}/activate`),
  deleteSession: (id: number) => call<object>('DELETE', `/api/v1/sessions/${id}`),
  attachTarget: (sessionId: number, targetId: number) =>
    call<object>('PATCH', `/api/v1/sessions/${sessionId}/add`, { target_id: String(targetId) }),
  detachTarget: (sessionId: number, targetId: number) =>
    call<object>('PATCH', `/api/v1/sessions/${sessionId}/remove`, { target_id: String(targetId) }),

  /** Newest first. */
  targets: (sessionId: number, signal?: AbortSignal) => get<Target[]>(`/api/v1/targets/?session_id=${sessionId}`, signal),
  /** Creates the target if new and attaches it to the active session. */
  addTarget: (url: string) => call<object>('POST', '/api/v1/targets/', { target_url: url }),
  deleteTarget: (id: number) => call<object>('DELETE', `/api/v1/targets/${id}`),

  configuration: (signal?: AbortSignal) => get<ConfigItem[]>('/api/v1/configuration', signal),
  /** All or nothing: one unknown key and nothing changes (400, `data` names the keys). */
  patchConfiguration: (changes: Map<string, string>) => call<object>('PATCH', '/api/v1/configuration/', new URLSearchParams([...changes])),
};
