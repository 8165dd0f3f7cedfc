/**
 * The library: `start(options)` runs an assessd server inside another program (a `node:test` run,
 * a tool that embeds it) and resolves with its URL and a `close()`.
 *
 * ```ts
 * import { start } from 'assessd';
 * const server = await start({ host: '127.0.0.1', port: 0, dataDir });
 * // the API runs programs: a token is generated (and required) on every interface
 * await fetch(`${server.url}/api/v1/sessions/`, { headers: { authorization: `Bearer ${server.token}` } });
 * await server.close();
 * ```
 */
export { start, type AssessdServer } from './start.js';
export { OptionError, type StartOptions } from './options.js';
