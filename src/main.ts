#!/usr/bin/env node
/** CLI: parse flags, open the store, listen, and stop cleanly on SIGTERM/SIGINT. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { loadWebAssets } from './api/page.js';
import { parseCli, UsageError, USAGE } from './cli.js';
import { DEFAULT_CONFIGURATION_FILE, DEFAULT_DATA_DIR, PROJECT_ROOT, WEB_ASSETS_DIR } from './paths.js';
import { createServer } from './server.js';
import { loadDefaults } from './store/defaults.js';
import { DataDirInUseError } from './store/lock.js';
import { openStore } from './store/store.js';

// Under concurrent load V8 grows its young generation up to 48 MB, for a few per cent of speed:
// measured, keeping it at its start size cost 2-4% of req/s and saved 12-24 MB of RSS.
setFlagsFromString('--semi-space-growth-factor=1');

const log = (line: string) => console.error(`assessd: ${line}`);

function fail(message: string, code = 1): never {
  console.error(`assessd: ${message}`);
  process.exit(code);
}

async function main(): Promise<void> {
  let command;
  try {
    command = parseCli(process.argv.slice(2), process.env, DEFAULT_DATA_DIR);
  } catch (err) {
    if (err instanceof UsageError) fail(err.message, 2);
    throw err;
  }
  if (command.kind === 'help') return console.log(USAGE);
  if (command.kind === 'version') {
    const pkg = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    return console.log(pkg.version);
  }
  const { options } = command;

  const web = loadWebAssets(WEB_ASSETS_DIR);
  const defaults = loadDefaults(DEFAULT_CONFIGURATION_FILE);
  const store = await openStore({ dir: options.dataDir, defaults, log, compactAfter: options.compactAfter });
  const server = createServer({ store, web, fileServerPort: options.fileServerPort, maxBody: options.maxBody, log });
  // Handlers first: a signal that comes as soon as the start-up line is out must stop cleanly.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: finishing in-flight requests and writes`);
    // close() stops accepting and waits for requests in flight; idle keep-alive sockets go now.
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    await closed;
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  server.listen(options.port, options.host);
  try {
    await once(server, 'listening');
  } catch (err) {
    await store.close();
    throw err;
  }
  const { address, port } = server.address() as AddressInfo;
  const shown = address.includes(':') ? `[${address}]` : address;
  console.log(`assessd listening on http://${shown}:${port} (data: ${options.dataDir})`);
  // Compressed once, now that the first requests can be answered: beside the store's reads they
  // would have queued behind it (a gzip request meanwhile compresses its own file).
  setTimeout(() => web.compress(), 100).unref();
}

main().catch((err: NodeJS.ErrnoException) => {
  // One line, no stack trace: the message says what to fix.
  // its code is for programs: the user reads the message as it always was
  if (err instanceof DataDirInUseError) fail(err.message);
  fail(err.code && !err.message.includes(err.code) ? `${err.message} (${err.code})` : err.message);
});
