/** The server's options: what `start()` takes (and the CLI's flags map to), checked in one place. */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { isDottedQuad } from './http/ipv4.js';
import { TOKEN_PATTERN } from './store/token-file.js';

/** What `start()` takes; numbers may also come as decimal strings (as from a command line). */
export interface StartOptions {
  /** Where the store lives (created if missing). Required. */
  dataDir: string;
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port to listen on; `0` picks a free one. Default `8009`. */
  port?: number | string;
  /** Port of the output file server that `/output_files/` redirects to. Default `8010`. */
  fileServerPort?: number | string;
  /** Largest request body accepted, in bytes. Default 1 MiB. */
  maxBody?: number | string;
  /** Largest session bundle `POST /api/v1/bundles/` accepts, in bytes. Default 64 MiB. */
  maxImportBody?: number | string;
  /** Largest HAR `POST /api/v1/targets/<id>/transactions/` accepts, in bytes. Default 1 GiB. */
  maxHarBody?: number | string;
  /**
   * Host names allowed beside IP literals, `localhost`, `*.localhost` and the machine's own name
   * (`.lab.example` allows the domain and its subdomains; `'*'` turns the Host check off: unsafe).
   * An array, or a comma-separated string.
   */
  allowedHosts?: string[] | string;
  /** The API token. Default: one generated on first start and kept in `dataDir/token` (the API runs programs). */
  token?: string;
  /** Serve without a token: loopback hosts only (logged as a warning). */
  noToken?: boolean;
  /** Journal bytes after which it is folded into the snapshots (advanced; default: adaptive). */
  compactAfter?: number | string;
  /** How many plugins run at once. Default: the machine's available parallelism. */
  workers?: number | string;
  /** Seconds a run may take (paused time not counted) before it is aborted. Default 3600. */
  runTimeout?: number | string;
  /** Seconds each request of a built-in check may take, connect to last byte. Default 10. */
  checkTimeout?: number | string;
  /** Where the intercepting proxy listens. Default `127.0.0.1`. */
  proxyHost?: string;
  /** The proxy's port: default 8008, or 0 (a free one) when `port` is 0; 0 picks a free one. */
  proxyPort?: number | string;
  /** No proxy (and no CA). */
  noProxy?: boolean;
  /** Where log lines go. Default: standard error, prefixed `assessd: `. */
  log?: (line: string) => void;
}

export interface ResolvedOptions {
  dataDir: string;
  host: string;
  port: number;
  fileServerPort: number;
  maxBody: number;
  maxImportBody: number;
  maxHarBody: number;
  allowedHosts: string[] | '*';
  token?: string;
  noToken: boolean;
  compactAfter?: number;
  workers: number;
  runTimeout: number;
  checkTimeout: number;
  proxyHost: string;
  proxyPort: number;
  noProxy: boolean;
  log: (line: string) => void;
}

/** A bad option: `start()` rejects with it, the CLI prints it as a usage error. */
export class OptionError extends Error {
  readonly code = 'ERR_INVALID_OPTION';
}

export const DEFAULT_MAX_BODY = 1024 * 1024;
export const DEFAULT_MAX_IMPORT_BODY = 64 * 1024 * 1024;
export const DEFAULT_MAX_HAR_BODY = 1024 * 1024 * 1024;
const KNOWN_OPTIONS = new Set([
  'dataDir', 'host', 'port', 'fileServerPort', 'maxBody', 'maxImportBody', 'maxHarBody', 'allowedHosts', 'token', 'noToken', 'compactAfter', 'workers',
  'runTimeout', 'checkTimeout', 'proxyHost', 'proxyPort', 'noProxy', 'log',
]);
const HOST_ENTRY = /^\.?[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;

/**
 * An IPv4-mapped IPv6 address as its IPv4 one, whichever way it is written (`::ffff:127.0.0.1`, or
 * `::ffff:7f00:1` as WHATWG URLs write it); any other name as it is.
 */
export function unmapped(host: string): string {
  // most names are no mapped address: their start reads them without compiling the patterns below
  if (host.length < 8 || host.slice(0, 7).toLowerCase() !== '::ffff:') return host;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(host);
  if (hex) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(host) ? host.slice(7) : host;
}

/** Whether an address or name reaches only this machine. */
export function isLoopback(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const v4 = unmapped(bare);
  return bare.toLowerCase() === 'localhost' || bare === '::1' || (v4.startsWith('127.') && isDottedQuad(v4));
}

/**
 * Checks and completes options. `name` turns an option's name into the caller's vocabulary for the
 * messages (the CLI says `--max-body` where the library says `maxBody`).
 */
export function resolveOptions(options: StartOptions, name: (option: string) => string = (o) => o): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new OptionError('options must be an object');
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(key)) throw new OptionError(`unknown option ${JSON.stringify(key)} (known: ${[...KNOWN_OPTIONS].join(', ')})`);
  }
  const integer = (option: keyof StartOptions, fallback: number, min: number, max: number, what: string): number => {
    const raw = options[option];
    if (raw === undefined) return fallback;
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^[0-9]{1,16}$/.test(raw) ? Number(raw) : NaN;
    if (!(Number.isSafeInteger(n) && n >= min && n <= max)) throw new OptionError(`${name(option)} must be ${what}, not ${JSON.stringify(raw)}`);
    return n;
  };
  const port = (option: keyof StartOptions, fallback: number) => integer(option, fallback, 0, 65535, 'a port number from 0 to 65535');

  if (typeof options.dataDir !== 'string') throw new OptionError(`${name('dataDir')} is required`);
  if (options.dataDir.trim() === '') throw new OptionError(`${name('dataDir')} must name a directory, not ${JSON.stringify(options.dataDir)}`);
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host.trim() === '') throw new OptionError(`${name('host')} must not be empty`);
  if (options.token !== undefined && (typeof options.token !== 'string' || !TOKEN_PATTERN.test(options.token))) {
    throw new OptionError(`${name('token')} must be printable ASCII without spaces`);
  }
  if (options.token !== undefined && options.noToken) throw new OptionError(`${name('token')} and ${name('noToken')} exclude each other`);
  if (options.noToken && !isLoopback(host)) {
    throw new OptionError(`${name('noToken')} is for a loopback host only: beyond it, anyone who reaches the API could run the configured programs`);
  }
  if (options.log !== undefined && typeof options.log !== 'function') throw new OptionError(`${name('log')} must be a function`);
  const proxyHost = options.proxyHost ?? '127.0.0.1';
  if (typeof proxyHost !== 'string' || proxyHost.trim() === '') throw new OptionError(`${name('proxyHost')} must not be empty`);
  if (options.noToken && options.noProxy !== true && !isLoopback(proxyHost)) {
    throw new OptionError(`${name('noToken')} leaves a proxy beyond loopback open to anyone who reaches it: give ${name('proxyHost')} a loopback address, or ${name('noProxy')}`);
  }
  const apiPort = port('port', 8009);
  return {
    dataDir: resolve(options.dataDir),
    host,
    port: apiPort,
    fileServerPort: port('fileServerPort', 8010),
    maxBody: integer('maxBody', DEFAULT_MAX_BODY, 1, Number.MAX_SAFE_INTEGER, 'a positive number of bytes'),
    maxImportBody: integer('maxImportBody', DEFAULT_MAX_IMPORT_BODY, 1, Number.MAX_SAFE_INTEGER, 'a positive number of bytes'),
    maxHarBody: integer('maxHarBody', DEFAULT_MAX_HAR_BODY, 1, Number.MAX_SAFE_INTEGER, 'a positive number of bytes'),
    allowedHosts: allowedHosts(options.allowedHosts, name('allowedHosts')),
    token: options.token,
    noToken: options.noToken === true,
    compactAfter: options.compactAfter === undefined ? undefined : integer('compactAfter', 0, 0, Number.MAX_SAFE_INTEGER, 'a number of bytes'),
    workers: integer('workers', availableParallelism(), 0, 256, 'a number of workers from 0 to 256'),
    runTimeout: integer('runTimeout', 3600, 1, 365 * 24 * 3600, 'a number of seconds from 1 to 31536000 (365 days)'),
    checkTimeout: integer('checkTimeout', 10, 1, 3600, 'a number of seconds from 1 to 3600'),
    proxyHost,
    // a server on a free port (tests, a library user) gets a free proxy port too: never a clash on 8008
    proxyPort: port('proxyPort', apiPort === 0 ? 0 : 8008),
    noProxy: options.noProxy === true,
    log: options.log ?? ((line) => console.error(`assessd: ${line}`)),
  };
}

function allowedHosts(raw: string[] | string | undefined, option: string): string[] | '*' {
  if (raw === undefined) return [];
  const entries = (typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : [raw]).map((e) =>
    typeof e === 'string' ? e.trim().toLowerCase() : e,
  );
  const hosts: string[] = [];
  for (const entry of entries) {
    if (entry === '') continue;
    if (entry === '*') return '*';
    if (typeof entry !== 'string' || !HOST_ENTRY.test(entry)) {
      throw new OptionError(`${option} takes host names (or .domain for a domain and its subdomains), not ${JSON.stringify(entry)}`);
    }
    hosts.push(entry);
  }
  return hosts;
}
