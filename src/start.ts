/** start(options): open the store, listen, and hand back the server's URL and a way to close it. */
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { lazyWebAssets, type WebAssets } from './api/page.js';
import { fsPromises } from './lazy-builtins.js';
import { isLoopback, resolveOptions, type StartOptions } from './options.js';
import type { ProxyView } from './api/proxy.js';
import { prepareCa } from './proxy/ca.js';
import { evidenceRecorder, type EvidenceRecorder } from './proxy/evidence-recorder.js';
import { startProxy, type ProxyServer } from './proxy/index.js';
import { checkWebBuilt, defaultItems, version, webFiles } from './paths.js';
import { openEngine, type Engine } from './engine/index.js';
import { createServer } from './server.js';
import { drain } from './http/drain.js';
import { listenEarly } from './http/early-listen.js';
import type { DefaultItem } from './store/configuration.js';
import { openStore, type Store } from './store/store.js';
import { openEvidence, type Evidence } from './evidence/store.js';
import { fileLogins, type LoginKeeper } from './store/logins.js';
import { loadOrCreateToken, TOKEN_FILE } from './store/token-file.js';

/** A running server. */
export interface AssessdServer {
  /** `http://HOST:PORT`, no trailing slash (IPv6 in brackets). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** The token every API request needs, or undefined when the server needs none. */
  readonly token: string | undefined;
  /** A URL that logs a browser in (`/?token=...`), when there is a token; it names a loopback address for a wildcard host. */
  readonly loginUrl: string | undefined;
  /** The intercepting proxy, `http://HOST:PORT` (a loopback address for a wildcard host); undefined with `noProxy`. */
  readonly proxyUrl: string | undefined;
  /** Stops accepting connections, finishes requests and writes in flight, releases the data directory. */
  close(): Promise<void>;
}

/** A token shorter than this is warned of: 128 bits written as base64url (a generated one has 43). */
const STRONG_TOKEN_CHARACTERS = 22;
/** How long a stop lets the API's requests (and the proxy's exchanges) in flight finish before it cuts their connections. */
const STOP_DRAIN_MS = 10_000;

/** The page's files, loaded once per process: two servers in one process share them. */
let web: WebAssets | undefined;

function urlHost(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/**
 * Starts assessd: resolves once it listens. Rejects with an Error whose `code` says why:
 * `ERR_INVALID_OPTION`, `ERR_DATA_DIR_IN_USE`, `ERR_DATA_FILE` (a corrupt data file), `EADDRINUSE`, or
 * the file system's own code (`EACCES`, `ENOTDIR`, ...). Never exits the process, never installs
 * signal handlers.
 */
export async function start(options: StartOptions): Promise<AssessdServer> {
  const resolved = resolveOptions(options);
  const { log, dataDir, host } = resolved;
  if (!web) {
    checkWebBuilt();
    web = lazyWebAssets(webFiles);
  }
  // read once the data directory is this process's: the single executable writes its shipped
  // files (wordlists) there as it reads them, which must not happen under another server
  let defaults: DefaultItem[] | undefined;
  const readDefaults = () => (defaults ??= defaultItems(dataDir));
  // bound now, taken over once the server is ready: a client that connects meanwhile waits for its
  // answer instead of being refused (a bind's error is thrown there, after the data directory's own)
  const early = listenEarly(resolved.port, host);
  let store: Store;
  try {
    store = await openStore({ dir: dataDir, defaults: readDefaults, log, compactAfter: resolved.compactAfter });
  } catch (err) {
    await early.close();
    throw err;
  }
  let server: ReturnType<typeof createServer> | undefined;
  let engine: Engine | undefined;
  let proxy: ProxyServer | undefined;
  let proxyView: ProxyView | undefined;
  let recorder: EvidenceRecorder | undefined;
  let evidence: Evidence | undefined;
  let logins: LoginKeeper | undefined;
  let token = resolved.token;
  let generated = false;
  try {
    // the API runs programs: a token on every interface, loopback included (--no-token opts out there)
    if (token === undefined && !resolved.noToken) {
      ({ token, created: generated } = await loadOrCreateToken(dataDir, log));
    }
    evidence = await openEvidence({ dataDir, store, log });
    engine = await openEngine({ store, dataDir, workers: resolved.workers, runTimeoutMs: resolved.runTimeout * 1000, checkTimeoutMs: resolved.checkTimeout * 1000, evidence, log });
    if (!resolved.noProxy) {
      // made on the first start; one that is there but is not a CA stops the start, naming it
      const ca = await prepareCa(dataDir);
      // the API's port, once it listens (a free one is known only then)
      let apiPortKnown: number | undefined;
      const apiPort = () => (apiPortKnown ??= (server?.address() as AddressInfo | null)?.port) ?? resolved.port;
      recorder = evidenceRecorder({ store, evidence, log });
      proxy = await startProxy({ host: resolved.proxyHost, port: resolved.proxyPort, ca, token, ownPorts: () => [apiPort()], recorder, log, drainMs: STOP_DRAIN_MS }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') err.message = `the proxy's port ${resolved.proxyPort} on ${resolved.proxyHost} is in use: choose another with --proxy-port, or run without it (--no-proxy)`;
        throw err;
      });
      const running = proxy;
      proxyView = { host: running.host, port: running.port, ca, counts: () => running.counts(), needsToken: token !== undefined && !isLoopback(running.host) };
    }
    logins = fileLogins(dataDir, log);
    server = createServer({
      store,
      engine,
      evidence,
      maxHarBody: resolved.maxHarBody,
      replayTimeoutMs: resolved.checkTimeout * 1000,
      web,
      fileServerPort: resolved.fileServerPort,
      maxBody: resolved.maxBody,
      maxImportBody: resolved.maxImportBody,
      defaults: readDefaults(),
      allowedHosts: resolved.allowedHosts,
      token,
      logins,
      version: version(),
      ...(proxyView ? { proxy: proxyView } : {}),
      log,
    });
    await early.adopt(server);
  } catch (err) {
    await early.close();
    server?.close(() => {});
    await proxy?.close();
    await engine?.close();
    await evidence?.close();
    // a start that failed leaves nothing of its own behind: the next one generates the token again
    if (generated) await fsPromises().unlink(join(dataDir, TOKEN_FILE)).catch(() => {});
    await store.close();
    throw err;
  }
  // said once listening: a start that fails prints its one line and nothing else
  if (generated) log(`generated an API token in ${join(dataDir, TOKEN_FILE)} (every API request needs it: the API runs programs)`);
  if (resolved.noToken) {
    log(`warning: serving ${host} without a token (--no-token): any user or program on this machine can read every session and run the configured tools`);
  }
  if (resolved.allowedHosts === '*') log('warning: the Host check is off (--allowed-hosts *): any web page can reach the API by DNS rebinding');
  if (token !== undefined && token.length < STRONG_TOKEN_CHARACTERS) {
    log(`warning: the token has ${token.length} characters: one of fewer than ${STRONG_TOKEN_CHARACTERS} (128 bits as base64url) can be guessed by whoever reaches the API; give a longer one, or none and let assessd generate one`);
  }
  const { address, port } = server.address() as AddressInfo;
  const url = `http://${urlHost(address)}:${port}`;
  const reachable = address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? '::1' : address;
  // whoever is refused the directory (a second server, `assessd export`) learns where to go instead
  // and whether the token to send is the directory's file (a server given one, beside a file an earlier start made, is not)
  store.advertise({ url: `http://${urlHost(reachable)}:${port}`, ...(token === undefined ? {} : { tokenFile: resolved.token === undefined }) });
  const loginUrl = token === undefined ? undefined : `http://${urlHost(reachable)}:${port}/?token=${encodeURIComponent(token)}`;
  const proxyUrl = proxy && `http://${urlHost(proxy.host === '0.0.0.0' ? '127.0.0.1' : proxy.host === '::' ? '::1' : proxy.host)}:${proxy.port}`;
  // Compressed once, now that the first requests can be answered: beside the store's reads they
  // would have queued behind it (a gzip request meanwhile compresses its own file).
  const assets = web;
  // set once the try above did not throw
  const runningEngine = engine!;
  const openedEvidence = evidence!;
  const openedLogins = logins!;
  const catalogue = runningEngine.catalogue;
  setTimeout(() => {
    try {
      assets.compress();
    } catch (err) {
      // its files gone or changed since the start's check: each page request reads them again
      log(`the web application could not be read (${(err as Error).message}): its pages answer 500 until it can`);
    }
    // the shipped plugins, read now rather than by the first request that needs them
    void catalogue.plugins;
  }, 100).unref();

  let closing: Promise<void> | undefined;
  const listening = server;
  const runningProxy = proxy;
  const runningRecorder = recorder;
  return {
    url,
    host,
    port,
    dataDir,
    token,
    loginUrl,
    proxyUrl,
    close() {
      closing ??= (async () => {
        // no new connection; requests in flight get STOP_DRAIN_MS
        const closed = drain(listening, STOP_DRAIN_MS);
        // runs first: each aborted run is recorded (and requeued) before the store closes
        await runningEngine.close();
        await runningProxy?.close();
        // what the proxy forwarded last is stored before the store closes
        await runningRecorder?.flush();
        await closed;
        // no write of the logins after this: another server may have the directory next
        await openedLogins.close?.();
        await openedEvidence.close();
        await store.close();
      })();
      return closing;
    },
  };
}
