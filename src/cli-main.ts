/** The CLI's run: flags, the start-up line, signals and exit codes (src/main.ts runs it). */
import { resolve } from 'node:path';
import { parseCli, UsageError, USAGE } from './cli.js';
import { oneLine } from './engine/findings.js';
import { isCommand, runCommand } from './commands.js';
import { loadNow } from './lazy-builtins.js';
import { dropStartTunables } from './malloc-tunables.js';
import { DEFAULT_DATA_DIR, version } from './paths.js';
import { start } from './start.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export { start } from './start.js';
// for the build's warm start (src/build.ts): the code cache then holds what reading the flags compiles
export { parseCli } from './cli.js';

// Loaded before the CLI sets V8's young-generation flag: once a flag changes, node compiles each module
// it loads without its code cache (the first listen's cluster and dns: ~6 ms instead of ~2.5).
loadNow('node:cluster', 'node:dns');

const log = (line: string) => console.error(`assessd: ${line}`);

function fail(message: string, code = 1): never {
  // one line whatever the message quotes (JSON.parse quotes a file's text, line breaks and all)
  console.error(`assessd: ${oneLine(message)}`);
  process.exit(code);
}

async function main(): Promise<void> {
  dropStartTunables();
  // `assessd export|import ...`: offline commands on a data directory, no server
  if (isCommand(process.argv[2])) {
    keepYoungGenerationSmall();
    process.exitCode = await runCommand(process.argv.slice(2), process.env);
    return;
  }
  let command;
  try {
    command = parseCli(process.argv.slice(2), process.env, DEFAULT_DATA_DIR);
  } catch (err) {
    if (err instanceof UsageError) fail(err.message, 2);
    throw err;
  }
  if (command.kind === 'help') return console.log(USAGE);
  if (command.kind === 'version') return console.log(version());
  // V8's young generation kept at its start size (src/young-generation.ts), from now on: after the
  // flags are read, as node compiles what it loads once a V8 flag has changed without its code cache
  keepYoungGenerationSmall();
  // A log whose reader went away (`npm start 2>&1 | head -1`) loses its lines and the server goes on:
  // the write's EPIPE, unhandled, ended it with nothing said and its lock left behind.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }

  // No handler while starting: a signal then stops the process at once (nothing is acknowledged yet,
  // every file is written atomically), even if the start is stuck in a synchronous call.
  const server = await start({ ...command.options, log }).catch((err: unknown) => {
    // a write's error names no file: the directory is what to free space on
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      const why = code === 'ENOSPC' ? 'is full' : "is over this user's quota";
      throw Object.assign(new Error(`the disk holding the data directory ${resolve(command.options.dataDir)} ${why} (${(err as Error).message}): free some space there and start again`), { code });
    }
    throw err;
  });
  // Handlers before the start-up line: a signal that comes as soon as it is out stops cleanly.
  let stopping = false;
  const stop = async (signal: 'SIGTERM' | 'SIGINT' | 'SIGHUP') => {
    if (stopping) {
      // a second Ctrl-C: the user would otherwise wait for what is in flight (10 s at most), or reach for kill -9
      log(`${signal} again: exiting now; what was in flight is cut (every acknowledged change is on disk; the tools still running are ended, their runs put back by the next start)`);
      process.exit(signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143);
    }
    stopping = true;
    log(`${signal}: finishing in-flight requests and writes`);
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // the terminal or ssh session it was started from closed: a stop, not a death that leaves its tools running
  process.on('SIGHUP', () => void stop('SIGHUP'));
  const proxy = server.proxyUrl === undefined ? '' : `; proxy on ${server.proxyUrl}`;
  const login = server.loginUrl === undefined ? '' : `; log in at ${server.loginUrl}`;
  console.log(`assessd listening on ${server.url} (data: ${server.dataDir})${proxy}${login}`);
}

/** Runs the CLI with this process's arguments. */
export function runCli(): void {
  main().catch((err: NodeJS.ErrnoException) => {
    // One line, no stack trace: the message says what to fix.
    fail(err.code && !err.message.includes(err.code) && !err.code.startsWith('ERR_') ? `${err.message} (${err.code})` : err.message);
  });
}
