/**
 * GET /api/v1/openapi.json: an OpenAPI 3.1 document of every route, built from the route table (each
 * route carries its RouteDoc) and the message catalogue, so the API is never described twice.
 */
import { HTTP_MESSAGES } from '../http/jsend.js';
import { prepared, type PreparedReply } from '../http/respond.js';
import type { RouteEntry, Router } from '../http/router.js';
import type { Handler } from './context.js';

type Schema = Record<string, unknown>;

/** An argument: from the query string, or (for writes) the form body too. */
export interface ArgDoc {
  type: 'string' | 'integer' | 'boolean';
  description: string;
  required?: boolean;
  /** Given several times, every value counts (any-of filters, several URLs). */
  repeatable?: boolean;
  enum?: string[];
}

/** What a route documents of itself; `add`ed with it to the route table. */
export interface RouteDoc {
  summary: string;
  description?: string;
  args?: Record<string, ArgDoc>;
  /** A body that is not a form: its media type, and what it holds. */
  body?: { type: string; description: string; schema?: Schema };
  /** The success: its status, and the envelope's `data` (JSON), or another content type and its schema; none for a route that always refuses. */
  ok?: {
    status: number;
    description: string;
    data?: Schema;
    type?: string;
    schema?: Schema;
    headers?: Record<string, string>;
    /** Other content types the success may come in (by an argument), with their schemas. */
    alternatives?: Record<string, Schema>;
  };
  /** Refusals by status: the messages of the catalogue it may answer (checked in this order). */
  fails?: Partial<Record<number, readonly string[]>>;
  /** Refusals whose message is built from the request (it names a field or a count): described, not listed. */
  builtFails?: Partial<Record<number, string>>;
  /** Needs no token (health, the page and its files). */
  open?: boolean;
}

export type ApiRouter = Router<Handler, RouteDoc>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const arrayOf = (items: Schema): Schema => ({ type: 'array', items });
export const EMPTY: Schema = { type: 'object', additionalProperties: false };

const STRING = { type: 'string' };
const SCHEMAS: Record<string, Schema> = {
  Session: {
    type: 'object',
    required: ['id', 'name', 'active'],
    additionalProperties: false,
    properties: { id: { type: 'integer', minimum: 1 }, name: { type: 'string', minLength: 1, maxLength: 255 }, active: { type: 'boolean' } },
  },
  Target: {
    type: 'object',
    required: ['id', 'target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url', 'top_domain', 'top_url', 'alternative_ips', 'scope', 'max_user_rank', 'max_owtf_rank'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      target_url: { type: 'string', format: 'uri' },
      host_name: STRING,
      host_ip: { type: 'string', description: 'The host when it is an IP literal, else ""' },
      port_number: { type: 'string', description: 'The port, or the scheme default' },
      url_scheme: { type: 'string', enum: ['http', 'https'] },
      host_path: STRING,
      ip_url: STRING,
      top_domain: STRING,
      top_url: STRING,
      alternative_ips: arrayOf(STRING),
      scope: { type: 'boolean' },
      max_user_rank: { type: 'integer' },
      max_owtf_rank: { type: 'integer' },
    },
  },
  ConfigItem: {
    type: 'object',
    required: ['key', 'value', 'section', 'descrip', 'dirty'],
    additionalProperties: false,
    properties: { key: STRING, value: STRING, section: STRING, descrip: STRING, dirty: { type: 'boolean', description: 'Changed through the API' } },
  },
  Plugin: {
    type: 'object',
    required: ['key', 'code', 'group', 'type', 'name', 'title', 'descrip', 'file', 'attr', 'min_time'],
    properties: {
      key: { type: 'string', description: '<type>@<code>' },
      code: STRING,
      group: { type: 'string', enum: ['web', 'network', 'auxiliary'] },
      type: STRING,
      name: STRING,
      title: STRING,
      descrip: STRING,
      file: { type: 'string', description: 'The plugin file it comes from' },
      attr: { type: ['string', 'null'] },
      min_time: { type: ['string', 'null'] },
    },
  },
  Work: {
    type: 'object',
    required: ['id', 'active', 'target', 'plugin'],
    properties: { id: { type: 'integer', minimum: 1 }, active: { type: 'boolean', description: 'false while paused' }, target: { $ref: '#/components/schemas/Target' }, plugin: { $ref: '#/components/schemas/Plugin' } },
  },
  Worker: {
    type: 'object',
    required: ['id', 'name', 'busy', 'paused', 'work', 'start_time', 'worker'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      name: { type: 'string', description: 'Worker-<id>' },
      busy: { type: 'boolean' },
      paused: { type: 'boolean' },
      work: { type: 'array', description: '[] or [<target>, <plugin>]' },
      start_time: { type: 'string', description: '"NA", or when the current run began (YYYY/MM/DD HH:MM:SS, local time)' },
      worker: { type: ['integer', 'null'], description: "The running program's pid" },
      started_at: { type: ['string', 'null'], description: 'Extension, with include=started_at: when the current run began, ISO 8601' },
    },
  },
  Finding: {
    type: 'object',
    required: ['rank', 'title', 'detail'],
    properties: {
      rank: { type: 'integer', minimum: -1, maximum: 5 },
      title: STRING,
      detail: { type: 'string', description: 'The evidence: the header or line that shows it' },
      transactions: { type: 'array', items: { type: 'integer', minimum: 1 }, maxItems: 100, description: "Extension: the ids of the target's transactions that show it, oldest first (a grep plugin's matches, a built-in check's own requests)" },
      transactions_total: { type: 'integer', minimum: 1, description: 'Extension: how many transactions show it, when more than `transactions` lists' },
    },
  },
  Output: {
    type: 'object',
    required: ['id', 'target_id', 'plugin_key', 'plugin_code', 'plugin_group', 'plugin_type', 'status', 'owtf_rank', 'user_rank', 'user_notes', 'output_path', 'start_time', 'end_time', 'run_time', 'error'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      target_id: { type: 'integer', minimum: 1 },
      plugin_key: STRING,
      plugin_code: STRING,
      plugin_group: STRING,
      plugin_type: STRING,
      status: { type: 'string', enum: ['Running', 'Successful', 'Aborted', 'Crashed', 'Skipped'] },
      owtf_rank: { type: 'integer', minimum: -1, maximum: 5 },
      user_rank: { type: 'integer', minimum: -1, maximum: 5 },
      user_notes: STRING,
      output_path: { type: 'string', description: 'The run\'s directory, relative to DATA_DIR/outputs ("" when it ran no program)' },
      start_time: { type: 'string', description: 'DD/MM/YYYY-HH:MM, local time' },
      end_time: { type: ['string', 'null'] },
      run_time: { type: ['string', 'null'], description: 'e.g. "1m, 2s, 345ms"' },
      error: { type: ['string', 'null'] },
      output: { type: 'string', description: 'Its text, at most 1 MiB (in GET .../poutput/ only)' },
      findings: { type: 'array', items: { $ref: '#/components/schemas/Finding' }, description: 'Extension' },
      exit_code: { type: ['integer', 'null'], description: 'Extension' },
      started_at: { type: 'string', description: 'Extension: ISO 8601' },
      ended_at: { type: ['string', 'null'], description: 'Extension: ISO 8601' },
    },
  },
  TestGroup: {
    type: 'object',
    required: ['code', 'priority', 'descrip', 'hint', 'url', 'mappings'],
    properties: { code: STRING, priority: { type: 'integer' }, descrip: STRING, hint: STRING, url: STRING, mappings: { type: 'object', additionalProperties: { type: 'array', items: STRING } } },
  },
  RunError: {
    type: 'object',
    required: ['id', 'owtf_message', 'traceback', 'user_message', 'reported', 'github_issue_url'],
    properties: { id: { type: 'integer', minimum: 1 }, owtf_message: STRING, traceback: STRING, user_message: STRING, reported: { type: 'boolean' }, github_issue_url: { type: ['string', 'null'] } },
  },
  Fail: {
    type: 'object',
    required: ['status', 'message', 'code'],
    additionalProperties: false,
    properties: {
      status: { const: 'fail' },
      message: STRING,
      code: { type: 'integer', minimum: 400, maximum: 499 },
      data: { type: 'object', additionalProperties: STRING, description: 'The offending submitted fields' },
    },
  },
  Error: {
    type: 'object',
    required: ['status', 'message', 'code'],
    additionalProperties: false,
    properties: { status: { const: 'error' }, message: { const: HTTP_MESSAGES.internal }, code: { type: 'integer', minimum: 500 } },
  },
};

const WRITES = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const JSON_TYPE = 'application/json';

/** A pattern's shape: its literals, with every parameter as `{}` (two patterns of one shape are one OpenAPI path). */
export function patternShape(pattern: string): string {
  return pattern.replace(/\{\w+:\w+\}/g, '{}');
}

function paramSchema(type: string): Schema {
  if (type === 'any') return { type: 'string', minLength: 1 };
  return type === 'int' ? { type: 'integer', minimum: 0 } : { type: 'string', pattern: '^[A-Za-z_]+$' };
}

/**
 * The OpenAPI path of patterns of one shape, and its path parameters. OpenAPI forbids two paths
 * that differ only in their parameters' names (`/sessions/{session_id}` and `/sessions/{action}`):
 * such a parameter is named after all of them (`{session_id_or_action}`) and takes either form.
 */
function openApiPath(patterns: string[]): { path: string; params: Schema[] } {
  const params: Schema[] = [];
  const split = patterns.map((pattern) => pattern.split('/'));
  const path = split[0]
    .map((part, i) => {
      if (part.startsWith('*')) {
        const name = patterns[0].startsWith('/static/') ? 'file' : patterns[0].startsWith('/output_files/') ? 'file_url' : 'path';
        params.push({ name, in: 'path', required: true, schema: STRING, description: 'The rest of the path (it may hold slashes)' });
        return `{${name}}`;
      }
      const typed = split.map((parts) => /^\{(\w+):(\w+)\}$/.exec(parts[i])).filter((m): m is RegExpExecArray => m !== null);
      if (typed.length === 0) return part;
      const names = [...new Set(typed.map((m) => m[1]))];
      const schemas = [...new Set(typed.map((m) => m[2]))].map(paramSchema);
      const name = names.join('_or_');
      params.push({ name, in: 'path', required: true, schema: schemas.length === 1 ? schemas[0] : { oneOf: schemas } });
      return `{${name}}`;
    })
    .join('/');
  return { path, params };
}

/** Two routes of one shape and method (`GET /sessions/{id}` and `GET /sessions/{action}`) as one operation. */
function mergeDocs(docs: RouteDoc[]): RouteDoc {
  if (docs.length === 1) return docs[0];
  const fails: Record<number, string[]> = {};
  for (const doc of docs) for (const [status, messages] of Object.entries(doc.fails ?? {})) (fails[Number(status)] ??= []).push(...(messages ?? []));
  const main = docs.find((doc) => doc.ok) ?? docs[0];
  const others = docs.filter((doc) => doc !== main);
  return {
    ...main,
    description: [main.description, ...others.map((doc) => `With a word (an action) in place of the id: ${doc.summary}.`)].filter(Boolean).join(' '),
    args: Object.assign({}, ...docs.map((doc) => doc.args ?? {})),
    fails,
  };
}

function argSchema(arg: ArgDoc): Schema {
  const one: Schema = { type: arg.type, ...(arg.enum ? { enum: arg.enum } : {}) };
  return arg.repeatable ? { oneOf: [one, arrayOf(one)] } : one;
}

function failResponse(messages: readonly string[], built?: string): Schema {
  const unique = [...new Set(messages)];
  const listed = unique.map((m) => `"${m}"`).join(', ');
  const message = built ? { type: 'string', examples: unique } : { enum: unique };
  return {
    description: built ? `${listed}${listed ? '; ' : ''}${built}` : listed,
    content: { [JSON_TYPE]: { schema: { allOf: [ref('Fail'), { properties: { message } }] } } },
  };
}

function operation(entry: RouteEntry<RouteDoc>, doc: RouteDoc, path: string, pathParams: Schema[]): Schema {
  const write = WRITES.has(entry.method);
  const args = Object.entries(doc.args ?? {});
  const parameters = [...pathParams];
  let requestBody: Schema | undefined;
  if (doc.body) {
    requestBody = { required: true, description: doc.body.description, content: { [doc.body.type]: { schema: doc.body.schema ?? {} } } };
    for (const [name, arg] of args) parameters.push({ name, in: 'query', required: arg.required ?? false, description: arg.description, schema: argSchema(arg) });
  } else if (write && args.length > 0) {
    // the arguments of a write come from the query string or the form body (like Tornado's get_argument)
    const properties = Object.fromEntries(args.map(([name, arg]) => [name, { ...argSchema(arg), description: arg.description }]));
    const required = args.filter(([, arg]) => arg.required).map(([name]) => name);
    requestBody = {
      required: required.length > 0,
      description: 'Arguments, as a form body or in the query string (the first value from either place counts)',
      content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties, ...(required.length ? { required } : {}) } } },
    };
  } else {
    for (const [name, arg] of args) {
      const schema = argSchema(arg);
      parameters.push({ name, in: 'query', required: arg.required ?? false, description: arg.description, schema, ...(arg.repeatable ? { explode: true } : {}) });
    }
  }

  const responses: Record<string, Schema> = {};
  const ok = doc.ok;
  if (ok) {
    const content = ok.type
      ? { [ok.type]: { schema: ok.schema ?? STRING } }
      : { [JSON_TYPE]: { schema: { type: 'object', required: ['status', 'data'], additionalProperties: false, properties: { status: { const: 'success' }, data: ok.data ?? EMPTY } } } };
    for (const [type, schema] of Object.entries(ok.alternatives ?? {})) Object.assign(content, { [type]: { schema } });
    responses[ok.status] = {
      description: ok.description,
      ...(ok.status === 301 ? {} : { content }),
      ...(ok.headers ? { headers: Object.fromEntries(Object.entries(ok.headers).map(([h, d]) => [h, { description: d, schema: STRING }])) } : {}),
    };
  }
  const fails: Record<number, string[]> = {};
  for (const [status, messages] of Object.entries(doc.fails ?? {})) fails[Number(status)] = [...(messages ?? [])];
  // access control, before routing: every route
  (fails[403] ??= []).push(HTTP_MESSAGES.hostNotAllowed);
  if (write) fails[403].push(HTTP_MESSAGES.crossOrigin);
  if (!doc.open) (fails[401] ??= []).push(HTTP_MESSAGES.authenticationRequired);
  if (requestBody || write) (fails[413] ??= []).push(HTTP_MESSAGES.payloadTooLarge);
  if (requestBody && !doc.body) (fails[415] ??= []).push(HTTP_MESSAGES.unsupportedMediaType);
  for (const status of Object.keys(doc.builtFails ?? {})) fails[Number(status)] ??= [];
  for (const status of Object.keys(fails).sort()) responses[status] = failResponse(fails[Number(status)], doc.builtFails?.[Number(status)]);
  if (write) responses['500'] = { description: 'The change could not be made durable: nothing changed', content: { [JSON_TYPE]: { schema: ref('Error') } } };

  const segments = entry.pattern.split('/').filter(Boolean);
  const tag = segments[0] === 'api' ? segments[2] : segments[0];
  return {
    operationId: `${entry.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/_$/, '')}`,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [tag],
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
    ...(doc.open ? { security: [] } : {}),
  };
}

/** The OpenAPI 3.1 document of these routes. A route without a doc is an error: every route is documented. */
export function buildOpenApi(routes: RouteEntry<RouteDoc>[], version: string): Schema {
  const byShape = new Map<string, RouteEntry<RouteDoc>[]>();
  for (const entry of routes) {
    if (!entry.doc) throw new Error(`route ${entry.method} ${entry.pattern} has no documentation`);
    const shape = patternShape(entry.pattern);
    byShape.set(shape, [...(byShape.get(shape) ?? []), entry]);
  }
  const paths: Record<string, Record<string, Schema>> = {};
  for (const entries of byShape.values()) {
    const { path, params } = openApiPath([...new Set(entries.map((e) => e.pattern))]);
    const operations: Record<string, Schema> = (paths[path] = {});
    for (const method of new Set(entries.map((e) => e.method))) {
      const same = entries.filter((e) => e.method === method);
      operations[method.toLowerCase()] = operation(same[0], mergeDocs(same.map((e) => e.doc!)), path, params);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'assessd',
      version,
      description:
        'The HTTP API of assessd, compatible with the OWASP OWTF framework: JSend envelopes, form-encoded arguments ' +
        '(query string, then body, first value wins), every path also answers with one trailing slash. ' +
        'Unknown paths under /api and /debug answer 404 "Not found"; known paths with another method 405 "Method not allowed" with Allow. ' +
        'GET and HEAD of any other path answer the web application. See docs/API.md.',
      license: { name: 'BSD-3-Clause', identifier: 'BSD-3-Clause' },
    },
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The API token (needed when the server has one: beyond loopback, or --token)' },
        loginCookie: { type: 'apiKey', in: 'cookie', name: 'assessd-PORT', description: 'Set by POST /api/v1/auth for the web application' },
      },
    },
    // a token is needed only when the server has one: `{}` makes it optional
    security: [{}, { bearer: [] }, { loginCookie: [] }],
  };
}

export function registerOpenApi(router: ApiRouter, version: string): void {
  let reply: PreparedReply | undefined;
  router.add(
    'GET',
    '/api/v1/openapi.json',
    // built on first request: by then every route is in the table
    () => (reply ??= prepared({ status: 200, body: Buffer.from(JSON.stringify(buildOpenApi(router.routes(), version))) })),
    { summary: 'This API as an OpenAPI 3.1 document', ok: { status: 200, description: 'The document (not in a JSend envelope)', type: 'application/json', schema: { type: 'object' } } },
  );
}
