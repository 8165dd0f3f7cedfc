/**
 * The contract as one table: every error row of API.md (sessions' twelve in their order of checks,
 * targets, configuration, 404, 405, 415) and every success row, each on a fresh server.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BUNDLE_MESSAGES, HTTP_MESSAGES, MESSAGES } from '../../src/api/messages.ts';
import { bundle, JSON_BODY } from '../helpers/bundles.ts';
import { request, startServer, type Response, type StartOptions, type TestServer } from '../helpers/server.ts';

type Form = Record<string, string | string[]> | [string, string][];

interface Row {
  name: string;
  /** Server options for this row (e.g. a small body limit, a token). */
  options?: StartOptions;
  setup?: (server: TestServer) => Promise<void>;
  method: string;
  /** Sent exactly as written, query string included. */
  path: string;
  form?: Form;
  body?: string | Buffer;
  headers?: Record<string, string>;
  expect: {
    status: number;
    /** For 4xx: the exact message. */
    message?: string;
    /** For success: the exact `data`; a function to check it otherwise. */
    data?: unknown;
    /** For 4xx: `data` must be present with exactly these keys. */
    dataKeys?: string[];
    /** For 405: the methods `Allow` must list (HEAD aside). */
    allow?: string[];
    /** For a success that is a file, not a JSend envelope: checks the whole answer. */
    file?: (res: Response) => void;
  };
  /** Follow-up GETs and the exact `data` each must answer. */
  then?: { path: string; data: unknown }[];
}

const JSON_TYPE = 'application/json; charset=utf-8';
const T = MESSAGES;
const H = HTTP_MESSAGES;

async function send(server: TestServer, method: string, path: string, form?: Form): Promise<Response> {
  const res = await request(server.url, path, { method, form });
  assert.ok(res.status < 300, `setup ${method} ${path} answered ${res.status} ${res.text}`);
  return res;
}

/** Session 1 "default session" active, with target 1 (http://a.example/). */
const withTarget = async (s: TestServer) => {
  await send(s, 'POST', '/api/v1/targets/', { target_url: 'http://a.example/' });
};

/** Target 1 in session 1; session 2 "second" (active) with no target. */
const twoSessions = async (s: TestServer) => {
  await withTarget(s);
  await send(s, 'POST', '/api/v1/sessions/', { name: 'second' });
};

/** Target 1 in sessions 1 and 2; session 2 active. */
const sharedTarget = async (s: TestServer) => {
  await twoSessions(s);
  await send(s, 'PATCH', '/api/v1/sessions/2/add', { target_id: '1' });
};

const session = (id: number, name: string, active: boolean) => ({ id, name, active });

const targetA = {
  id: 1,
  target_url: 'http://a.example/',
  host_name: 'a.example',
  host_ip: '',
  port_number: '80',
  url_scheme: 'http',
  host_path: 'a.example/',
  ip_url: '',
  top_domain: 'example',
  top_url: 'http://a.example:80',
  alternative_ips: [],
  scope: true,
  max_user_rank: -1,
  max_owtf_rank: -1,
};

const SESSIONS_METHODS = ['GET', 'POST', 'PATCH', 'DELETE'];
const long = (n: number) => 'x'.repeat(n);

const table: Row[] = [
  // Sessions, errors in the contract's order of checks
  { name: '#1 GET of a session with an action', method: 'GET', path: '/api/v1/sessions/1/activate', expect: { status: 400, message: T.actionMustBeNone } },
  { name: '#1 GET of an action without a session id', method: 'GET', path: '/api/v1/sessions/activate', expect: { status: 400, message: T.actionMustBeNone } },
  { name: '#1 before #2: GET of an unknown session with an action', method: 'GET', path: '/api/v1/sessions/999/add', expect: { status: 400, message: T.actionMustBeNone } },
  { name: '#2 GET of an unknown session', method: 'GET', path: '/api/v1/sessions/999', expect: { status: 400, message: T.invalidSessionId } },
  { name: '#2 GET of a session id beyond any integer', method: 'GET', path: '/api/v1/sessions/99999999999999999999999', expect: { status: 400, message: T.invalidSessionId } },
  { name: '#2 GET of a deleted session', setup: async (s) => { await twoSessions(s); await send(s, 'DELETE', '/api/v1/sessions/2'); }, method: 'GET', path: '/api/v1/sessions/2', expect: { status: 400, message: T.invalidSessionId } },
  { name: '#3 POST with a session id', method: 'POST', path: '/api/v1/sessions/1', form: { name: 'x' }, expect: { status: 400, message: T.incorrectQueryParameters }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#3 POST with an action', method: 'POST', path: '/api/v1/sessions/activate', form: { name: 'x' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#3 POST with a session id and an action', method: 'POST', path: '/api/v1/sessions/1/activate', form: { name: 'x' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#3 POST without a name', method: 'POST', path: '/api/v1/sessions/', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#3 POST with an empty name', method: 'POST', path: '/api/v1/sessions/', form: { name: '' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#3 POST with a white-space-only name', method: 'POST', path: '/api/v1/sessions/', form: { name: ' \t\n ' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#3 POST with a 256-character name', method: 'POST', path: '/api/v1/sessions/', form: { name: long(256) }, expect: { status: 400, message: T.incorrectQueryParameters }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#3 before #4: POST of an existing name with a session id', method: 'POST', path: '/api/v1/sessions/1', form: { name: 'default session' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#4 POST of a name that already exists', method: 'POST', path: '/api/v1/sessions/', form: { name: 'default session' }, expect: { status: 409, message: T.dbError }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#4 POST of an existing name with surrounding white space', method: 'POST', path: '/api/v1/sessions/', form: { name: '  default session\t' }, expect: { status: 409, message: T.dbError } },
  { name: '#5 PATCH without a session id', method: 'PATCH', path: '/api/v1/sessions/', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#5 PATCH of an action without a session id', method: 'PATCH', path: '/api/v1/sessions/activate', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#5 PATCH add without a session id', method: 'PATCH', path: '/api/v1/sessions/add', form: { target_id: '1' }, setup: withTarget, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#5 before #9: PATCH of an unknown action without a session id', method: 'PATCH', path: '/api/v1/sessions/frobnicate', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#6 PATCH add without target_id', method: 'PATCH', path: '/api/v1/sessions/1/add', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#6 PATCH remove without target_id', method: 'PATCH', path: '/api/v1/sessions/1/remove', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#6 PATCH add with an empty target_id', method: 'PATCH', path: '/api/v1/sessions/1/add', form: { target_id: '' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#6 PATCH remove with an empty target_id', method: 'PATCH', path: '/api/v1/sessions/1/remove', form: { target_id: '' }, expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#6 before #7: PATCH add of an unknown session without target_id', method: 'PATCH', path: '/api/v1/sessions/999/add', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#7 PATCH activate of an unknown session', method: 'PATCH', path: '/api/v1/sessions/999/activate', expect: { status: 400, message: T.invalidParameterType }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#7 PATCH add of an unknown session', setup: withTarget, method: 'PATCH', path: '/api/v1/sessions/999/add', form: { target_id: '1' }, expect: { status: 400, message: T.invalidParameterType } },
  { name: '#7 PATCH remove of an unknown session', setup: withTarget, method: 'PATCH', path: '/api/v1/sessions/999/remove', form: { target_id: '1' }, expect: { status: 400, message: T.invalidParameterType } },
  { name: '#7 before #8: PATCH add of an unknown session with a bad target_id', method: 'PATCH', path: '/api/v1/sessions/999/add', form: { target_id: 'abc' }, expect: { status: 400, message: T.invalidParameterType } },
  { name: '#8 PATCH add with a non-integer target_id', method: 'PATCH', path: '/api/v1/sessions/1/add', form: { target_id: 'abc' }, expect: { status: 400, message: T.invalidTargetReference } },
  { name: '#8 PATCH add with a negative target_id', setup: withTarget, method: 'PATCH', path: '/api/v1/sessions/1/add', form: { target_id: '-1' }, expect: { status: 400, message: T.invalidTargetReference } },
  { name: '#8 PATCH add with a fractional target_id', setup: withTarget, method: 'PATCH', path: '/api/v1/sessions/1/add', form: { target_id: '1.5' }, expect: { status: 400, message: T.invalidTargetReference } },
  { name: '#8 PATCH add of a target that does not exist', method: 'PATCH', path: '/api/v1/sessions/1/add', form: { target_id: '999' }, expect: { status: 400, message: T.invalidTargetReference } },
  { name: '#8 PATCH remove of a target that does not exist', method: 'PATCH', path: '/api/v1/sessions/1/remove', form: { target_id: '999' }, expect: { status: 400, message: T.invalidTargetReference } },
  { name: '#8 PATCH remove of a target not attached to that session', setup: twoSessions, method: 'PATCH', path: '/api/v1/sessions/2/remove', form: { target_id: '1' }, expect: { status: 400, message: T.invalidTargetReference }, then: [{ path: '/api/v1/targets/1', data: targetA }, { path: '/api/v1/targets/?session_id=1', data: [targetA] }] },
  { name: '#9 PATCH with an unknown action changes nothing', setup: twoSessions, method: 'PATCH', path: '/api/v1/sessions/1/frobnicate', form: { target_id: '1' }, expect: { status: 200, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', false), session(2, 'second', true)] }, { path: '/api/v1/targets/?session_id=1', data: [targetA] }] },
  { name: '#9 PATCH of a session without an action changes nothing', setup: twoSessions, method: 'PATCH', path: '/api/v1/sessions/1', expect: { status: 200, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', false), session(2, 'second', true)] }] },
  { name: '#9 PATCH with an unknown action on an unknown session', method: 'PATCH', path: '/api/v1/sessions/999/frobnicate', expect: { status: 200, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#10 DELETE without a session id', method: 'DELETE', path: '/api/v1/sessions/', expect: { status: 400, message: T.incorrectQueryParameters }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#10 DELETE with an action', method: 'DELETE', path: '/api/v1/sessions/1/activate', expect: { status: 400, message: T.incorrectQueryParameters }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: '#10 DELETE of an action without a session id', method: 'DELETE', path: '/api/v1/sessions/activate', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#10 before #11: DELETE of an unknown session with an action', method: 'DELETE', path: '/api/v1/sessions/999/activate', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: '#11 DELETE of an unknown session', method: 'DELETE', path: '/api/v1/sessions/999', expect: { status: 400, message: T.invalidSessionId } },
  { name: '#12 PUT of the sessions collection', method: 'PUT', path: '/api/v1/sessions/', form: { name: 'x' }, expect: { status: 405, message: H.methodNotAllowed, allow: SESSIONS_METHODS } },
  { name: '#12 PUT of a session', method: 'PUT', path: '/api/v1/sessions/1', expect: { status: 405, message: H.methodNotAllowed, allow: SESSIONS_METHODS } },
  { name: '#12 PUT of a session action', method: 'PUT', path: '/api/v1/sessions/1/activate', expect: { status: 405, message: H.methodNotAllowed, allow: SESSIONS_METHODS } },

  // Sessions, success rows
  { name: 'GET of the sessions', method: 'GET', path: '/api/v1/sessions/', expect: { status: 200, data: [session(1, 'default session', true)] } },
  { name: 'GET of the sessions ordered by id', setup: twoSessions, method: 'GET', path: '/api/v1/sessions/', expect: { status: 200, data: [session(1, 'default session', false), session(2, 'second', true)] } },
  { name: 'GET of the active sessions', setup: twoSessions, method: 'GET', path: '/api/v1/sessions/?active=true', expect: { status: 200, data: [session(2, 'second', true)] } },
  { name: 'GET of the inactive sessions', setup: twoSessions, method: 'GET', path: '/api/v1/sessions/?active=false', expect: { status: 200, data: [session(1, 'default session', false)] } },
  { name: 'GET of one session', setup: twoSessions, method: 'GET', path: '/api/v1/sessions/1', expect: { status: 200, data: session(1, 'default session', false) } },
  { name: 'POST of a session', method: 'POST', path: '/api/v1/sessions/', form: { name: 'new one' }, expect: { status: 201, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', false), session(2, 'new one', true)] }] },
  { name: 'PATCH activate', setup: twoSessions, method: 'PATCH', path: '/api/v1/sessions/1/activate', expect: { status: 200, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true), session(2, 'second', false)] }] },
  { name: 'PATCH add', setup: twoSessions, method: 'PATCH', path: '/api/v1/sessions/2/add', form: { target_id: '1' }, expect: { status: 200, data: {} }, then: [{ path: '/api/v1/targets/?session_id=2', data: [targetA] }, { path: '/api/v1/targets/?session_id=1', data: [targetA] }] },
  { name: 'PATCH add of a target already in the session is a no-op', setup: withTarget, method: 'PATCH', path: '/api/v1/sessions/1/add', form: { target_id: '1' }, expect: { status: 200, data: {} }, then: [{ path: '/api/v1/targets/?session_id=1', data: [targetA] }] },
  { name: 'PATCH remove of a target still in another session', setup: sharedTarget, method: 'PATCH', path: '/api/v1/sessions/2/remove', form: { target_id: '1' }, expect: { status: 200, data: {} }, then: [{ path: '/api/v1/targets/?session_id=2', data: [] }, { path: '/api/v1/targets/1', data: targetA }] },
  { name: 'PATCH remove that leaves a target in no session', setup: withTarget, method: 'PATCH', path: '/api/v1/sessions/1/remove', form: { target_id: '1' }, expect: { status: 200, data: {} }, then: [{ path: '/api/v1/targets/?session_id=1', data: [] }] },
  { name: 'DELETE of a session', setup: twoSessions, method: 'DELETE', path: '/api/v1/sessions/2', expect: { status: 200, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: 'DELETE of the last session', method: 'DELETE', path: '/api/v1/sessions/1', expect: { status: 200, data: {} }, then: [{ path: '/api/v1/sessions/', data: [session(2, 'default session', true)] }] },

  // Targets
  { name: 'GET of the targets', setup: withTarget, method: 'GET', path: '/api/v1/targets/', expect: { status: 200, data: [targetA] } },
  { name: 'GET of one target', setup: withTarget, method: 'GET', path: '/api/v1/targets/1', expect: { status: 200, data: targetA } },
  { name: 'POST of a target', method: 'POST', path: '/api/v1/targets/', form: { target_url: 'http://a.example/' }, expect: { status: 201, data: {} }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'DELETE of a target', setup: sharedTarget, method: 'DELETE', path: '/api/v1/targets/1', expect: { status: 200, data: {} }, then: [{ path: '/api/v1/targets/?session_id=1', data: [] }, { path: '/api/v1/targets/?session_id=2', data: [] }] },
  { name: 'POST of targets without target_url', method: 'POST', path: '/api/v1/targets/', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: 'POST of a target that is not an absolute http(s) URL', method: 'POST', path: '/api/v1/targets/', form: { target_url: 'ftp://a.example/' }, expect: { status: 400, message: T.invalidTargetUrl }, then: [{ path: '/api/v1/targets/', data: [] }] },
  { name: 'POST of a relative target URL', method: 'POST', path: '/api/v1/targets/', form: { target_url: 'a.example' }, expect: { status: 400, message: T.invalidTargetUrl } },
  { name: 'POST of a target already in the active session', setup: withTarget, method: 'POST', path: '/api/v1/targets/', form: { target_url: 'http://a.example/' }, expect: { status: 409, message: T.dbError }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'GET of an unknown target', method: 'GET', path: '/api/v1/targets/999', expect: { status: 400, message: T.invalidTargetReference } },
  { name: 'DELETE of an unknown target', method: 'DELETE', path: '/api/v1/targets/999', expect: { status: 400, message: T.invalidTargetReference } },
  { name: 'GET of the targets with a negative limit', method: 'GET', path: '/api/v1/targets/?limit=-1', expect: { status: 400, message: T.invalidParameterType } },
  { name: 'GET of the targets with a non-integer limit', method: 'GET', path: '/api/v1/targets/?limit=ten', expect: { status: 400, message: T.invalidParameterType } },
  { name: 'GET of the targets with a negative offset', method: 'GET', path: '/api/v1/targets/?offset=-2', expect: { status: 400, message: T.invalidParameterType } },
  { name: 'GET of the targets with a fractional offset', method: 'GET', path: '/api/v1/targets/?offset=1.5', expect: { status: 400, message: T.invalidParameterType } },
  { name: 'PUT of the targets collection', method: 'PUT', path: '/api/v1/targets/', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET', 'POST'] } },
  { name: 'PATCH of a target', setup: withTarget, method: 'PATCH', path: '/api/v1/targets/1', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET', 'DELETE'] } },

  // Extensions (docs/API.md): the targets list's new arguments
  { name: 'ext: GET of the targets with q', setup: sharedTarget, method: 'GET', path: '/api/v1/targets/?session_id=1&q=A.EXAMPLE', expect: { status: 200, data: [targetA] } },
  { name: 'ext: GET of the targets with q matching nothing', setup: withTarget, method: 'GET', path: '/api/v1/targets/?q=nowhere', expect: { status: 200, data: [] } },
  { name: 'ext: GET of the targets sorted by host', setup: withTarget, method: 'GET', path: '/api/v1/targets/?sort=host', expect: { status: 200, data: [targetA] } },
  { name: 'ext: GET of the targets with include=sessions', setup: sharedTarget, method: 'GET', path: '/api/v1/targets/?session_id=2&include=sessions', expect: { status: 200, data: [{ ...targetA, session_ids: [1, 2] }] } },
  { name: 'ext: GET of the targets with an unknown sort', method: 'GET', path: '/api/v1/targets/?sort=oldest', expect: { status: 400, message: T.invalidParameterType, dataKeys: ['sort'] } },
  { name: 'ext: GET of the targets with an unknown include', method: 'GET', path: '/api/v1/targets/?include=everything', expect: { status: 400, message: T.invalidParameterType, dataKeys: ['include'] } },

  // Extensions: the sessions overview
  { name: 'ext: GET of the sessions overview', setup: sharedTarget, method: 'GET', path: '/api/v1/overview/sessions', expect: { status: 200, data: [{ id: 1, name: 'default session', active: false, target_count: 1 }, { id: 2, name: 'second', active: true, target_count: 1 }] } },
  { name: 'ext: GET of the sessions overview filtered by name', setup: twoSessions, method: 'GET', path: '/api/v1/overview/sessions/?name=SEC', expect: { status: 200, data: [{ id: 2, name: 'second', active: true, target_count: 0 }] } },
  { name: 'ext: POST of the sessions overview', method: 'POST', path: '/api/v1/overview/sessions', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET'] } },

  // Extensions: bulk changes to targets
  { name: 'ext: bulk add', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: [['action', 'add'], ['target_url', 'http://b.example/'], ['target_url', 'http://a.example/'], ['target_url', 'nope']], expect: { status: 200, data: { session_id: 1, added: 1, created: 1, failed: [{ index: 1, target_url: 'http://a.example/', reason: 'already in the session' }, { index: 2, target_url: 'nope', reason: 'invalid URL' }] } } },
  { name: 'ext: bulk attach by ids', setup: twoSessions, method: 'POST', path: '/api/v1/targets/bulk', form: [['action', 'attach'], ['session_id', '2'], ['target_id', '1'], ['target_id', '5']], expect: { status: 200, data: { matched: 1, changed: 1, deleted: 0, missing: [5] } }, then: [{ path: '/api/v1/targets/?session_id=2', data: [targetA] }] },
  { name: 'ext: bulk detach by filter', setup: sharedTarget, method: 'POST', path: '/api/v1/targets/bulk', form: [['action', 'detach'], ['session_id', '2'], ['filter_session_id', '2'], ['q', 'a.example']], expect: { status: 200, data: { matched: 1, changed: 1, deleted: 0, missing: [] } }, then: [{ path: '/api/v1/targets/?session_id=2', data: [] }, { path: '/api/v1/targets/1', data: targetA }] },
  { name: 'ext: bulk delete by ids', setup: sharedTarget, method: 'POST', path: '/api/v1/targets/bulk', form: [['action', 'delete'], ['target_id', '1']], expect: { status: 200, data: { matched: 1, changed: 1, deleted: 1, missing: [] } }, then: [{ path: '/api/v1/targets/?session_id=1', data: [] }] },
  { name: 'ext: bulk without an action', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { target_id: '1' }, expect: { status: 400, message: T.incorrectQueryParameters, dataKeys: ['action'] }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'ext: bulk with an unknown action', method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'merge', target_id: '1' }, expect: { status: 400, message: T.incorrectQueryParameters, dataKeys: ['action'] } },
  { name: 'ext: bulk add without target_url', method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'add' }, expect: { status: 400, message: T.incorrectQueryParameters, dataKeys: ['target_url'] } },
  { name: 'ext: bulk delete without a selection', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'delete' }, expect: { status: 400, message: T.incorrectQueryParameters, dataKeys: ['target_id'] }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'ext: bulk delete with both selections', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'delete', target_id: '1', filter_session_id: '1' }, expect: { status: 400, message: T.incorrectQueryParameters, dataKeys: ['target_id'] }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'ext: bulk attach without session_id', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'attach', target_id: '1' }, expect: { status: 400, message: T.incorrectQueryParameters, dataKeys: ['session_id'] } },
  { name: 'ext: bulk delete with a non-integer target_id', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'delete', target_id: 'one' }, expect: { status: 400, message: T.invalidParameterType, dataKeys: ['target_id'] }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'ext: bulk attach with a non-integer session_id', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'attach', session_id: '2x', target_id: '1' }, expect: { status: 400, message: T.invalidParameterType, dataKeys: ['session_id'] } },
  { name: 'ext: bulk delete with a non-integer filter_session_id', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'delete', filter_session_id: '-1' }, expect: { status: 400, message: T.invalidParameterType, dataKeys: ['filter_session_id'] } },
  { name: 'ext: bulk attach to an unknown session', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'attach', session_id: '9', target_id: '1' }, expect: { status: 400, message: T.invalidSessionId } },
  { name: 'ext: bulk add to an unknown session', method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'add', session_id: '9', target_url: 'http://a.example/' }, expect: { status: 400, message: T.invalidSessionId }, then: [{ path: '/api/v1/targets/', data: [] }] },
  { name: 'ext: bulk delete by filter of an unknown session', setup: withTarget, method: 'POST', path: '/api/v1/targets/bulk', form: { action: 'delete', filter_session_id: '9' }, expect: { status: 400, message: T.invalidSessionId }, then: [{ path: '/api/v1/targets/', data: [targetA] }] },
  { name: 'ext: GET of the bulk endpoint', method: 'GET', path: '/api/v1/targets/bulk', expect: { status: 405, message: H.methodNotAllowed, allow: ['POST'] } },
  { name: 'ext: bulk with a JSON body', method: 'POST', path: '/api/v1/targets/bulk', body: '{"action":"add"}', headers: { 'content-type': 'application/json' }, expect: { status: 415, message: H.unsupportedMediaType } },

  // Configuration
  {
    name: 'GET of the configuration',
    method: 'GET',
    path: '/api/v1/configuration',
    expect: {
      status: 200,
      data: (data: any) => {
        assert.ok(Array.isArray(data));
        assert.equal(data.length, 113); // the 112 upstream settings and TLS_CA_FILES
      },
    },
  },
  { name: 'PATCH of a configuration item', method: 'PATCH', path: '/api/v1/configuration/', form: { TOOL_NMAP: '/opt/nmap' }, expect: { status: 200, data: {} }, then: [{ path: '/api/v1/configuration?key=TOOL_NMAP', data: [{ key: 'TOOL_NMAP', value: '/opt/nmap', section: 'TOOLS', descrip: undefined, dirty: true }] }] },
  { name: 'PATCH of an unknown configuration item', method: 'PATCH', path: '/api/v1/configuration/', form: { TOOL_NMAP: '/opt/nmap', NO_SUCH_KEY: 'x' }, expect: { status: 400, message: T.invalidConfigurationItem, dataKeys: ['NO_SUCH_KEY'] }, then: [{ path: '/api/v1/configuration?dirty=true', data: [] }] },
  { name: 'PATCH of the configuration without arguments', method: 'PATCH', path: '/api/v1/configuration/', expect: { status: 400, message: T.incorrectQueryParameters } },
  { name: 'POST of the configuration', method: 'POST', path: '/api/v1/configuration/', form: { TOOL_NMAP: 'x' }, expect: { status: 405, message: H.methodNotAllowed, allow: ['GET', 'PATCH'] } },
  { name: 'PUT of the configuration', method: 'PUT', path: '/api/v1/configuration', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET', 'PATCH'] } },
  { name: 'DELETE of the configuration', method: 'DELETE', path: '/api/v1/configuration/', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET', 'PATCH'] } },

  // Health
  { name: 'GET of the health check', method: 'GET', path: '/debug/health', expect: { status: 200, data: { status: 'ok' } } },
  { name: 'POST of the health check', method: 'POST', path: '/debug/health', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET'] } },

  // Unknown paths under /api and /debug
  { name: 'GET of an unknown /api path', method: 'GET', path: '/api/nope', expect: { status: 404, message: H.notFound } },
  { name: 'POST of an unknown /api path', method: 'POST', path: '/api/v1/nope', form: { name: 'x' }, expect: { status: 404, message: H.notFound } },
  { name: 'GET of /api itself', method: 'GET', path: '/api', expect: { status: 404, message: H.notFound } },
  { name: 'GET of an unknown /api/v1 resource', method: 'GET', path: '/api/v1/exploits/', expect: { status: 404, message: H.notFound } },
  { name: 'GET of an unknown /debug path', method: 'GET', path: '/debug/nope', expect: { status: 404, message: H.notFound } },
  { name: 'GET of the health check under /api/v1', method: 'GET', path: '/api/v1/debug/health', expect: { status: 404, message: H.notFound } },
  { name: 'GET of a session id that is not an unsigned integer nor a word', method: 'GET', path: '/api/v1/sessions/1a', expect: { status: 404, message: H.notFound } },
  { name: 'GET of a negative session id', method: 'GET', path: '/api/v1/sessions/-1', expect: { status: 404, message: H.notFound } },
  { name: 'DELETE of a negative session id', method: 'DELETE', path: '/api/v1/sessions/-1', expect: { status: 404, message: H.notFound } },
  { name: 'PATCH of a session path with two ids', method: 'PATCH', path: '/api/v1/sessions/1/2', expect: { status: 404, message: H.notFound } },
  { name: 'PATCH of a session action with an extra segment', method: 'PATCH', path: '/api/v1/sessions/1/activate/x', expect: { status: 404, message: H.notFound } },
  { name: 'GET of a session id with a sign', method: 'GET', path: '/api/v1/sessions/+1', expect: { status: 404, message: H.notFound } },
  { name: 'GET of a fractional target id', method: 'GET', path: '/api/v1/targets/1.0', expect: { status: 404, message: H.notFound } },
  { name: 'GET of a target id that is not an integer', method: 'GET', path: '/api/v1/targets/abc', expect: { status: 404, message: H.notFound } },
  { name: 'DELETE of a target id that is not an integer', method: 'DELETE', path: '/api/v1/targets/-3', expect: { status: 404, message: H.notFound } },
  { name: 'GET below a configuration path', method: 'GET', path: '/api/v1/configuration/TOOL_NMAP', expect: { status: 404, message: H.notFound } },

  // Bundles (extension): export
  {
    name: 'GET of a session bundle', setup: withTarget, method: 'GET', path: '/api/v1/bundles/1',
    expect: {
      status: 200,
      file: (res) => {
        assert.equal(res.headers['content-type'], JSON_TYPE);
        assert.equal(res.headers['content-disposition'], 'attachment; filename="default-session.assessd.json"');
        const body = res.json;
        assert.deepEqual(Object.keys(body), ['format', 'version', 'exported_at', 'session', 'targets']);
        assert.deepEqual({ ...body, exported_at: typeof body.exported_at }, { format: 'assessd-session', version: 1, exported_at: 'string', session: { name: 'default session' }, targets: [{ ...targetA, outputs: [] }] });
      },
    },
  },
  { name: 'GET of the bundle of an unknown session', method: 'GET', path: '/api/v1/bundles/999', expect: { status: 400, message: T.invalidSessionId } },
  { name: 'GET of a bundle id that is not an integer', method: 'GET', path: '/api/v1/bundles/one', expect: { status: 404, message: H.notFound } },
  { name: 'GET of the bundles collection', method: 'GET', path: '/api/v1/bundles/', expect: { status: 405, message: H.methodNotAllowed, allow: ['POST'] } },
  { name: 'POST of a bundle to a session id', method: 'POST', path: '/api/v1/bundles/1', body: bundle('x', []), headers: JSON_BODY, expect: { status: 405, message: H.methodNotAllowed, allow: ['GET'] } },
  { name: 'DELETE of a bundle', method: 'DELETE', path: '/api/v1/bundles/1', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET'] } },

  // Bundles (extension): import, all or nothing
  { name: 'POST of a bundle', setup: withTarget, method: 'POST', path: '/api/v1/bundles/', body: bundle('imported', ['http://a.example/', 'http://b.example/']), headers: JSON_BODY, expect: { status: 201, data: { id: 2, targets: 2 } }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true), session(2, 'imported', false)] }, { path: '/api/v1/targets/?session_id=2&target_url=http://a.example/', data: [targetA] }] },
  { name: 'POST of a bundle named by the name argument', method: 'POST', path: '/api/v1/bundles/?name=renamed', body: bundle(undefined, []), headers: JSON_BODY, expect: { status: 201, data: { id: 2, targets: 0 } }, then: [{ path: '/api/v1/sessions/2', data: session(2, 'renamed', false) }] },
  { name: 'POST of a bundle that is not JSON', method: 'POST', path: '/api/v1/bundles/', body: '{"format"', headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.notJson, dataKeys: ['body'] }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: 'POST of a bundle that is not UTF-8', method: 'POST', path: '/api/v1/bundles/', body: Buffer.from([0x7b, 0xff, 0x7d]), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.notUtf8, dataKeys: ['body'] } },
  { name: 'POST of a JSON array as a bundle', method: 'POST', path: '/api/v1/bundles/', body: '[]', headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.notObject, dataKeys: ['body'] } },
  { name: 'POST of a bundle nested 65 levels deep', method: 'POST', path: '/api/v1/bundles/', body: `{"x":${'['.repeat(64)}${']'.repeat(64)}}`, headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.tooDeep, dataKeys: ['body'] } },
  { name: 'POST of a bundle of 250,001 values in one array', method: 'POST', path: '/api/v1/bundles/', body: `{"targets":[${'0,'.repeat(250_000)}0]}`, headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.tooManyValues, dataKeys: ['body'] } },
  { name: 'POST of a bundle of another format', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', [], { format: 'other' }), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.format, dataKeys: ['format'] } },
  { name: 'POST of a bundle of an unknown version', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', [], { version: 2 }), headers: JSON_BODY, expect: { status: 400, message: 'Bundle version 2 is not supported: this build reads version 1', dataKeys: ['version'] } },
  { name: 'POST of a bundle without a version', method: 'POST', path: '/api/v1/bundles/', body: JSON.stringify({ format: 'assessd-session', session: { name: 'x' }, targets: [] }), headers: JSON_BODY, expect: { status: 400, message: 'Bundle "version" must be a number: this build reads version 1', dataKeys: ['version'] } },
  { name: 'POST of a bundle whose session is not an object', method: 'POST', path: '/api/v1/bundles/', body: bundle(undefined, [], { session: [] }), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.session, dataKeys: ['session'] } },
  { name: 'POST of a bundle whose session name is not a string', method: 'POST', path: '/api/v1/bundles/', body: bundle(undefined, [], { session: { name: ['x'] } }), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.nameType, dataKeys: ['session.name'] } },
  { name: 'POST of a bundle with no name anywhere', method: 'POST', path: '/api/v1/bundles/', body: bundle(undefined, []), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.noName, dataKeys: ['name'] } },
  { name: 'POST of a bundle with a 256-character name', method: 'POST', path: '/api/v1/bundles/', body: bundle(long(256), []), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.invalidName, dataKeys: ['session.name'] } },
  { name: 'POST of a bundle with an empty name argument', method: 'POST', path: '/api/v1/bundles/?name=%20', body: bundle('fine', []), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.invalidName, dataKeys: ['name'] } },
  { name: 'POST of a bundle without a targets list', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', [], { targets: null }), headers: JSON_BODY, expect: { status: 400, message: BUNDLE_MESSAGES.targets, dataKeys: ['targets'] } },
  { name: 'POST of a bundle with more than 100,000 targets', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', Array.from({ length: 100_001 }, (_, i) => `http://h${i}.example/`)), headers: JSON_BODY, expect: { status: 400, message: 'Bundle has 100001 targets: at most 100000 can be imported at once', dataKeys: ['targets'] } },
  { name: 'POST of a bundle with a target that is no object', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', [], { targets: [{ target_url: 'http://a.example/' }, 'http://b.example/'] }), headers: JSON_BODY, expect: { status: 400, message: 'targets[1] must be an object', dataKeys: ['targets[1]'] } },
  { name: 'POST of a bundle with a target without target_url', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', [], { targets: [{}] }), headers: JSON_BODY, expect: { status: 400, message: 'targets[0].target_url is missing', dataKeys: ['targets[0].target_url'] } },
  { name: 'POST of a bundle with a target_url that is no string', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', ['http://a.example/', { href: 'x' }]), headers: JSON_BODY, expect: { status: 400, message: 'targets[1].target_url must be a string', dataKeys: ['targets[1].target_url'] } },
  { name: 'POST of a bundle with an invalid target_url', method: 'POST', path: '/api/v1/bundles/', body: bundle('x', ['http://a.example/', 'http://b.example/', 'http://c.example/', 'a.example']), headers: JSON_BODY, expect: { status: 400, message: 'targets[3].target_url is not an absolute http(s) URL', dataKeys: ['targets[3].target_url'] }, then: [{ path: '/api/v1/targets/?session_id=1', data: [] }, { path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: 'POST of a bundle whose name is in use', setup: withTarget, method: 'POST', path: '/api/v1/bundles/', body: bundle('default session', ['http://new.example/']), headers: JSON_BODY, expect: { status: 409, message: T.dbError, dataKeys: ['name'] }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }, { path: '/api/v1/targets/?session_id=1', data: [targetA] }] },
  { name: 'POST of a bundle as a form', method: 'POST', path: '/api/v1/bundles/', form: { name: 'x' }, expect: { status: 415, message: BUNDLE_MESSAGES.mediaType } },
  { name: 'POST of a bundle over the import limit', options: { maxImportBody: 64 }, method: 'POST', path: '/api/v1/bundles/', body: bundle('too large for this server', []), headers: JSON_BODY, expect: { status: 413, message: H.payloadTooLarge }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },

  // Target lists as text and CSV (extension)
  {
    name: 'GET of the targets as text', setup: twoSessions, method: 'GET', path: '/api/v1/targets/?session_id=1&format=text',
    expect: { status: 200, file: (res) => { assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8'); assert.equal(res.text, 'http://a.example/\n'); } },
  },
  {
    name: 'GET of the targets as CSV', setup: withTarget, method: 'GET', path: '/api/v1/targets/?format=csv',
    expect: {
      status: 200,
      file: (res) => {
        assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
        assert.equal(res.text, 'id,target_url,host_name,host_ip,port_number,url_scheme,host_path,ip_url,top_domain,top_url,alternative_ips,scope,max_user_rank,max_owtf_rank\r\n1,http://a.example/,a.example,,80,http,a.example/,,example,http://a.example:80,,true,-1,-1\r\n');
      },
    },
  },
  { name: 'GET of the targets in an unknown format', method: 'GET', path: '/api/v1/targets/?format=xml', expect: { status: 400, message: T.invalidParameterType, dataKeys: ['format'] } },

  // Reports (extension)
  {
    name: 'GET of a session report', setup: withTarget, method: 'GET', path: '/api/v1/reports/1',
    expect: {
      status: 200,
      file: (res) => {
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
        assert.match(res.headers['content-security-policy'] as string, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'$/);
        assert.match(res.text, /^<!doctype html>/);
        assert.match(res.text, /<h1>default session<\/h1>/);
        assert.match(res.text, /http:\/\/a\.example\//);
        assert.doesNotMatch(res.text, /<script/i);
      },
    },
  },
  { name: 'GET of the report of an unknown session', method: 'GET', path: '/api/v1/reports/999', expect: { status: 400, message: T.invalidSessionId } },
  { name: 'POST of a report', method: 'POST', path: '/api/v1/reports/1', expect: { status: 405, message: H.methodNotAllowed, allow: ['GET'] } },
  { name: 'GET of the reports collection', method: 'GET', path: '/api/v1/reports/', expect: { status: 404, message: H.notFound } },

  // A body that is not a form
  { name: 'POST of a session with a JSON body', method: 'POST', path: '/api/v1/sessions/', body: '{"name":"json"}', headers: { 'content-type': 'application/json' }, expect: { status: 415, message: H.unsupportedMediaType }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  // its bytes were taken for the form itself
  { name: 'ext: POST of a session with a gzip-coded form', method: 'POST', path: '/api/v1/sessions/', body: 'name=coded', headers: { 'content-encoding': 'gzip' }, expect: { status: 415, message: H.unsupportedContentCoding }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  // a bundle's or a HAR's coded bytes would be read as JSON: refused the same way, before any is read
  { name: 'ext: POST of a gzip-coded bundle', method: 'POST', path: '/api/v1/bundles/', body: '{"format":"assessd-session","version":1,"session":{"name":"coded"},"targets":[]}', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, expect: { status: 415, message: H.unsupportedContentCoding }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },

  // Access control, before routing
  { name: 'A Host that names no allowed host (DNS rebinding)', method: 'GET', path: '/api/v1/sessions/', headers: { host: 'rebound.example:8009' }, expect: { status: 403, message: H.hostNotAllowed } },
  { name: 'The page under a Host that names no allowed host', method: 'GET', path: '/', headers: { host: 'rebound.example' }, expect: { status: 403, message: H.hostNotAllowed } },
  { name: 'A write from another origin', method: 'POST', path: '/api/v1/sessions/', form: { name: 'csrf' }, headers: { origin: 'http://evil.example' }, expect: { status: 403, message: H.crossOrigin }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: 'A write from Origin null', method: 'PATCH', path: '/api/v1/configuration/', form: { THREADS: '9' }, headers: { origin: 'null' }, expect: { status: 403, message: H.crossOrigin } },
  { name: 'A cross-site write (Sec-Fetch-Site)', method: 'DELETE', path: '/api/v1/sessions/1', headers: { 'sec-fetch-site': 'cross-site' }, expect: { status: 403, message: H.crossOrigin }, then: [{ path: '/api/v1/sessions/', data: [session(1, 'default session', true)] }] },
  { name: 'A same-origin write', method: 'POST', path: '/api/v1/sessions/', form: { name: 'same' }, headers: { 'sec-fetch-site': 'same-origin' }, expect: { status: 201, data: {} } },
  { name: 'A request without the token the server needs', options: { token: 'tok' }, method: 'GET', path: '/api/v1/sessions/', expect: { status: 401, message: H.authenticationRequired } },
  { name: 'A request with a wrong token', options: { token: 'tok' }, method: 'POST', path: '/api/v1/sessions/', form: { name: 'x' }, headers: { authorization: 'Bearer nope' }, expect: { status: 401, message: H.authenticationRequired } },
  { name: 'A request with the token', options: { token: 'tok' }, method: 'GET', path: '/api/v1/sessions/1', headers: { authorization: 'Bearer tok' }, expect: { status: 200, data: session(1, 'default session', true) } },
  { name: 'Health without the token', options: { token: 'tok' }, method: 'GET', path: '/debug/health', expect: { status: 200, data: { status: 'ok' } } },
];

function allowSet(header: string | undefined): string[] {
  assert.ok(header, 'a 405 has an Allow header');
  return header
    .split(',')
    .map((m) => m.trim().toUpperCase())
    .filter((m) => m !== 'HEAD' && m !== 'OPTIONS')
    .sort();
}

/** Follow-up data that says `descrip: undefined` only needs the key to be a string. */
function matchData(actual: any, expected: any): void {
  if (Array.isArray(expected) && expected.some((e) => e && typeof e === 'object' && 'descrip' in e && e.descrip === undefined)) {
    assert.equal(actual.length, expected.length);
    expected.forEach((e: any, i: number) => {
      assert.equal(typeof actual[i].descrip, 'string');
      assert.deepEqual(actual[i], { ...e, descrip: actual[i].descrip });
    });
    return;
  }
  assert.deepEqual(actual, expected);
}

async function runRow(row: Row): Promise<void> {
  const server = await startServer(row.options);
  try {
    await row.setup?.(server);
    const res = await request(server.url, row.path, { method: row.method, form: row.form, body: row.body, headers: row.headers });
    const what = `${row.method} ${row.path} -> ${res.status} ${res.text.slice(0, 300)}`;
    assert.equal(res.status, row.expect.status, what);
    if (row.expect.file) {
      row.expect.file(res);
      return;
    }
    assert.equal(res.headers['content-type'], JSON_TYPE, what);
    const body = res.json;
    if (row.expect.status < 400) {
      assert.deepEqual(Object.keys(body).sort(), ['data', 'status'], what);
      assert.equal(body.status, 'success', what);
      if (typeof row.expect.data === 'function') (row.expect.data as (d: unknown) => void)(body.data);
      else assert.deepEqual(body.data, row.expect.data, what);
    } else {
      assert.equal(body.status, 'fail', what);
      assert.equal(body.message, row.expect.message, what);
      assert.equal(body.code, row.expect.status, what);
      for (const key of Object.keys(body)) assert.ok(['status', 'message', 'code', 'data'].includes(key), `unexpected key ${key}: ${what}`);
      if ('data' in body) assert.ok(body.data !== null && typeof body.data === 'object' && !Array.isArray(body.data), what);
      if (row.expect.dataKeys) assert.deepEqual(Object.keys(body.data ?? {}).sort(), [...row.expect.dataKeys].sort(), what);
    }
    if (row.expect.allow) assert.deepEqual(allowSet(res.headers.allow as string | undefined), [...row.expect.allow].sort(), what);
    for (const follow of row.then ?? []) {
      const after = await request(server.url, follow.path, { headers: row.options?.token ? { authorization: `Bearer ${row.options.token}` } : {} });
      assert.equal(after.status, 200, `follow-up GET ${follow.path}: ${after.text}`);
      matchData(after.json.data, follow.data);
    }
  } finally {
    await server.close();
  }
}

describe('the contract table', () => {
  for (const row of table) {
    const outcome = row.expect.status < 400 ? `${row.expect.status}` : `${row.expect.status} ${row.expect.message}`;
    test(`${row.name} (${row.method} ${row.path}) is ${outcome}`, () => runRow(row));
  }
});

test('the message catalogue holds the contract strings, letter for letter', () => {
  assert.deepEqual(
    { ...MESSAGES },
    {
      actionMustBeNone: 'Action must be None',
      invalidSessionId: 'Invalid session id provided',
      incorrectQueryParameters: 'Incorrect query parameters',
      dbError: 'An unknown exception occurred when performing a DB operation',
      invalidParameterType: 'Invalid parameter type provided',
      invalidTargetReference: 'Invalid target reference provided',
      invalidTargetUrl: 'Invalid target URL provided',
      invalidConfigurationItem: 'Invalid configuration item specified',
    },
  );
  assert.equal(HTTP_MESSAGES.notFound, 'Not found');
  assert.equal(HTTP_MESSAGES.methodNotAllowed, 'Method not allowed');
  assert.equal(HTTP_MESSAGES.internal, 'Internal server error');
  assert.equal(HTTP_MESSAGES.hostNotAllowed, 'Host not allowed');
  assert.equal(HTTP_MESSAGES.crossOrigin, 'Cross-origin request refused');
  assert.equal(HTTP_MESSAGES.authenticationRequired, 'Authentication required');
});

test('the table walks every message of the catalogue', () => {
  const used = new Set(table.map((row) => row.expect.message).filter(Boolean));
  for (const message of Object.values(MESSAGES)) assert.ok(used.has(message), `no row expects "${message}"`);
  for (const message of Object.values(BUNDLE_MESSAGES)) assert.ok(used.has(message), `no row expects "${message}"`);
  for (const message of [HTTP_MESSAGES.notFound, HTTP_MESSAGES.methodNotAllowed, H.hostNotAllowed, H.crossOrigin, H.authenticationRequired]) assert.ok(used.has(message));
});
