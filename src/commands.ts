/**
 * The offline commands, `assessd export` and `assessd import`: a session bundle written from, or
 * read into, a data directory with no server running; `assessd import-har`: a HAR as a target's
 * transactions. They open it through the store, so they
 * take its lock: while a server holds it they refuse and name the API call to use instead.
 */
import { createReadStream, existsSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleProblem } from './api/messages.js';
import { DEFAULT_DATA_DIR, defaultItems } from './paths.js';
import { nodeFileSystem, tempFileWriter } from './store/atomic-file.js';
import { exportSession } from './engine/bundle-outputs.js';
import { BundledTransactionError, transactionEntries, writeBundledTransactions } from './evidence/bundle.js';
import { HarError, readHar } from './evidence/har.js';
import { openEvidence } from './evidence/store.js';
import { readCatalogue } from './engine/index.js';
import { oneLine } from './engine/findings.js';
import { isAlive } from './engine/proc.js';
import { parseBundle, referencedTransactions } from './store/bundle.js';
import { DataDirInUseError } from './store/lock.js';
import { PART_FILES } from './store/state.js';
import { openStore, type Store } from './store/store.js';
import { TOKEN_FILE } from './store/token-file.js';

export const EXPORT_USAGE = 'Usage: assessd export --session ID [--data-dir DIR] [--out FILE]';
export const IMPORT_USAGE = 'Usage: assessd import FILE [--data-dir DIR] [--name NAME]   (FILE - reads standard input)';
export const IMPORT_HAR_USAGE = 'Usage: assessd import-har FILE --target ID [--data-dir DIR] [--scope-only]   (FILE - reads standard input)';

/** What went wrong, in one line: main prints it and exits 1. */
export class CommandError extends Error {}

/** Whether the first word of the command line names an offline command. */
export function isCommand(word: string | undefined): word is 'export' | 'import' | 'import-har' {
  return word === 'export' || word === 'import' || word === 'import-har';
}

/** As a shell would need it: bare when it is safe so, else in single quotes. */
function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

interface Output {
  out(text: string): Promise<void>;
  err(line: string): void;
}

let stdoutErrorsSaid = false;

const processOutput: Output = {
  out(text) {
    // a reader that stops early (`| head`) closes the pipe: the write's callback says so, once, as
    // the command's one line; without a listener the stream's own 'error' would be a crash
    if (!stdoutErrorsSaid) {
      stdoutErrorsSaid = true;
      process.stdout.on('error', () => {});
    }
    return new Promise((resolve, reject) =>
      process.stdout.write(text, (err) => {
        if (!err) return resolve();
        reject((err as NodeJS.ErrnoException).code === 'EPIPE' ? new CommandError('the standard output was closed before all of it was written (EPIPE: its reader stopped)') : err);
      }),
    );
  },
  err: (line) => console.error(`assessd: ${oneLine(line)}`),
};

interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** String options (and flags, and -h/--help) and positionals; an unknown option is an error naming the usage. */
function parse(argv: string[], names: string[], usage: string, flags: string[] = []): Parsed {
  const options: Record<string, { type: 'string' | 'boolean' }> = Object.fromEntries([
    ...names.map((name) => [name, { type: 'string' }]),
    ...flags.map((name) => [name, { type: 'boolean' }]),
  ]);
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true }) as Parsed;
  } catch (err) {
    throw new CommandError(`${(err as Error).message.split('\n')[0]} (${usage})`);
  }
}

function dataDirOf(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  // as the server says it: an empty flag would be the current directory
  if (flag === '') throw new CommandError('--data-dir must name a directory, not ""');
  return resolve(flag ?? (env.ASSESSD_DATA_DIR || DEFAULT_DATA_DIR));
}

/**
 * Opens the store; a server holding it is named with the call that does the same through it.
 * Store log lines are kept back, so that a failure prints one line only.
 */
async function open(command: string, dir: string, logs: string[], instead: (server: string, tokenFile: boolean | undefined) => string): Promise<Store> {
  try {
    // the defaults read once the directory is this command's (defaultItems); whoever is refused
    // the directory meanwhile is told it is this command, not a server
    return await openStore({ dir, defaults: () => defaultItems(dir), log: (line) => logs.push(line), command });
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    if (err.command !== undefined) throw new CommandError(err.message);
    // a server still starting has not said its URL yet
    const owner = `data directory ${dir} is in use by a running server${err.pid === undefined ? '' : ` (process ${err.pid})`}`;
    throw new CommandError(`${owner}; stop it first, or use its API instead: ${instead(err.url ?? 'http://HOST:PORT', err.tokenFile)}`);
  }
}

/**
 * The header that sends the server's token, for a command we suggest: read from the data
 * directory's token file where the server keeps it; else the token it was given (`ASSESSD_TOKEN`).
 */
function authHeader(dir: string, tokenFile: boolean | undefined): string {
  const file = join(dir, TOKEN_FILE);
  // the server says which, once it listens; until then, the file if there is one
  return `-H "Authorization: Bearer ${(tokenFile ?? existsSync(file)) ? `$(cat ${shellQuote(file)})` : '$ASSESSD_TOKEN'}"`;
}

/** A required id flag (`--session`, `--target`): an unsigned integer, or an error naming the flag and the usage. */
function idFlag(values: Parsed['values'], flag: string, what: string, usage: string): number {
  const raw = values[flag] as string | undefined;
  if (raw === undefined) throw new CommandError(`--${flag} is required (${usage})`);
  if (!/^[0-9]{1,15}$/.test(raw)) throw new CommandError(`--${flag} must be a ${what} id (an unsigned integer), not ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** The data directory a command reads, which must hold a store: never created just to find it empty. */
function existingDataDir(values: Parsed['values'], env: NodeJS.ProcessEnv): string {
  const dir = dataDirOf(values['data-dir'] as string | undefined, env);
  try {
    statSync(join(dir, PART_FILES.sessions));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // only a file that is not there is "no data": a directory this user may not read says that
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new CommandError(`no assessd data in ${dir} (no ${PART_FILES.sessions})`);
    throw new CommandError(`cannot read the data directory ${dir}: ${(err as Error).message}`);
  }
  return dir;
}

/**
 * The file `--out` names, refused when it could not be the bundle: empty, a directory, or inside the
 * data directory (the export would replace one of the store's own files: its journal, a snapshot,
 * the token).
 */
function outputFile(value: string, dataDir: string): string {
  if (value === '') throw new CommandError('--out is empty: name the file to write the bundle to');
  const out = resolve(value);
  if (statSync(out, { throwIfNoEntry: false })?.isDirectory()) throw new CommandError(`--out ${out} is a directory: name a file in it`);
  const real = (path: string) => {
    try {
      return realpathSync(path);
    } catch {
      return path;
    }
  };
  const [parent, data] = [real(dirname(out)), real(dataDir)];
  if (parent === data || parent.startsWith(`${data}${sep}`)) {
    throw new CommandError(`--out ${out} is inside the data directory ${dataDir}, whose files are the store's own: write the bundle elsewhere`);
  }
  return out;
}

/**
 * Removes what an export to `out` that was killed left beside it (`.<name>.tmp-<pid>-...`, its
 * bundle whole or in part: a client's scope, on a USB stick as often as not), when its process is
 * gone. The data directory's own are swept by the store; nothing else sweeps these.
 */
function removeStaleTemps(out: string): void {
  let names: string[];
  try {
    names = readdirSync(dirname(out));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = tempFileWriter(out, name);
    if (pid === undefined || pid === process.pid || isAlive(pid)) continue;
    try {
      unlinkSync(join(dirname(out), name));
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
}

async function exportCommand(argv: string[], env: NodeJS.ProcessEnv, io: Output): Promise<void> {
  const { values, positionals } = parse(argv, ['session', 'data-dir', 'out'], EXPORT_USAGE);
  if (values.help) return io.out(`${EXPORT_USAGE}\n`);
  if (positionals.length > 0) throw new CommandError(`unexpected argument ${JSON.stringify(positionals[0])} (${EXPORT_USAGE})`);
  const id = idFlag(values, 'session', 'session', EXPORT_USAGE);
  const dir = existingDataDir(values, env);
  // `--out -` is the standard output, as `import -` reads the standard input
  const out = values.out === undefined || values.out === '-' ? undefined : outputFile(values.out as string, dir);

  const logs: string[] = [];
  const store = await open('export', dir, logs, (url, tokenFile) => `curl -f ${authHeader(dir, tokenFile)} -o ${shellQuote(out ?? `session-${id}.assessd.json`)} ${url}/api/v1/bundles/${id}`);
  let bundle: string | undefined;
  let summary = '';
  try {
    // the catalogue renders checklist and links outputs; a program's text is read from its run files
    const sources = { catalogue: readCatalogue(dir), outputsDir: join(dir, 'outputs') };
    const evidence = await openEvidence({ dataDir: dir, store, log: (line) => logs.push(line) });
    try {
      bundle = (await exportSession(store.state, sources, id, undefined, (targets) => transactionEntries(evidence, targets)))?.text;
    } finally {
      await evidence.close();
    }
    const row = store.state.sessions.get(id);
    if (row) {
      const count = row.targets?.size ?? 0;
      summary = `session ${id} ${JSON.stringify(row.name)} (${count} target${count === 1 ? '' : 's'})`;
    }
  } finally {
    await store.close();
  }
  if (bundle === undefined) throw new CommandError(`no session ${id} in ${dir}`);
  for (const line of logs) io.err(line);
  if (out === undefined) return io.out(bundle);
  try {
    removeStaleTemps(out);
    await nodeFileSystem.writeFileAtomic(out, bundle);
    await nodeFileSystem.syncDir(dirname(out));
  } catch (err) {
    throw new CommandError(`cannot write ${out}: ${(err as Error).message}`);
  }
  await io.out(`exported ${summary} to ${out}\n`);
}

function readBundleFile(file: string): Buffer {
  try {
    return readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new CommandError(`cannot read ${file === '-' ? 'standard input' : file}: ${e.code ?? e.message}`);
  }
}

/**
 * A failed write on a descriptor names no file (`ENOSPC: no space left on device, write`): the
 * message says the data directory it was writing to. A read is the input's (the store read
 * everything it needed when it opened).
 */
function namingDataDir(err: unknown, dir: string): unknown {
  const e = err as NodeJS.ErrnoException;
  if (err instanceof CommandError || typeof e?.code !== 'string' || e.path !== undefined || !WRITE_CALLS.has(e.syscall ?? '')) return err;
  return new CommandError(`${dir}: ${e.message}`);
}

const WRITE_CALLS = new Set(['write', 'writev', 'fsync', 'fdatasync', 'ftruncate', 'close']);

async function importCommand(argv: string[], env: NodeJS.ProcessEnv, io: Output): Promise<void> {
  const { values, positionals } = parse(argv, ['data-dir', 'name'], IMPORT_USAGE);
  if (values.help) return io.out(`${IMPORT_USAGE}\n`);
  if (positionals.length !== 1) throw new CommandError(`import takes one FILE (${IMPORT_USAGE})`);
  const [file] = positionals;
  const name = values.name as string | undefined;
  const parsed = parseBundle(readBundleFile(file), name);
  if (!parsed.ok) throw new CommandError(`${file}: ${bundleProblem(parsed.problem).message}`);
  const dir = dataDirOf(values['data-dir'] as string | undefined, env);

  const logs: string[] = [];
  const query = name === undefined ? '' : `?name=${encodeURIComponent(name)}`;
  const store = await open('import', dir, logs, (url, tokenFile) =>
    `curl ${authHeader(dir, tokenFile)} -H 'Content-Type: application/json' --data-binary @${shellQuote(file === '-' ? 'FILE' : resolve(file))} ${shellQuote(`${url}/api/v1/bundles/${query}`)}`,
  );
  const { urls, outputs } = parsed;
  let result;
  try {
    const evidence = await openEvidence({ dataDir: dir, store, log: (line) => logs.push(line) });
    try {
      let written;
      try {
        written = store.state.sessionIdByName.has(parsed.name) ? undefined : await writeBundledTransactions(evidence, parsed.transactions, referencedTransactions(parsed.outputs));
      } catch (err) {
        if (err instanceof BundledTransactionError) throw new CommandError(`${file}: ${err.message}`);
        throw err;
      }
      const segments = written?.segments ?? [];
      result = await store
        .change({ op: 'importSession', name: parsed.name, urls, at: Date.now(), ...(outputs.length > 0 ? { outputs } : {}), ...(segments.length > 0 ? { segments } : {}) })
        .catch(async (err) => {
          await written?.abort();
          throw err;
        });
      if (result.ok) written?.committed(store.state);
      else await written?.abort();
    } finally {
      await evidence.close();
    }
  } catch (err) {
    throw namingDataDir(err, dir);
  } finally {
    await store.close();
  }
  if (!result.ok) {
    if (result.reason === 'duplicate-name') {
      throw new CommandError(`a session named ${JSON.stringify(parsed.name)} already exists in ${dir}; choose another name with --name`);
    }
    throw new CommandError(`${file}: refused (${result.reason})`);
  }
  for (const line of logs) io.err(line);
  await io.out(`imported ${JSON.stringify(parsed.name)} as session ${result.id} with ${result.targets} target${result.targets === 1 ? '' : 's'} into ${dir}\n`);
}

async function importHarCommand(argv: string[], env: NodeJS.ProcessEnv, io: Output): Promise<void> {
  const { values, positionals } = parse(argv, ['data-dir', 'target'], IMPORT_HAR_USAGE, ['scope-only']);
  if (values.help) return io.out(`${IMPORT_HAR_USAGE}\n`);
  if (positionals.length !== 1) throw new CommandError(`import-har takes one FILE (${IMPORT_HAR_USAGE})`);
  const [file] = positionals;
  const target = idFlag(values, 'target', 'target', IMPORT_HAR_USAGE);
  const dir = existingDataDir(values, env);
  const scopeOnly = values['scope-only'] === true;
  const input = file === '-' ? process.stdin : createReadStream(file);
  // a missing file says so before the store is opened
  await new Promise<void>((resolve, reject) => (file === '-' ? resolve() : input.once('open', () => resolve()).once('error', reject))).catch((err: NodeJS.ErrnoException) => {
    throw new CommandError(`cannot read ${file}: ${err.code ?? err.message}`);
  });

  const logs: string[] = [];
  const store = await open('import-har', dir, logs, (url, tokenFile) =>
    `curl ${authHeader(dir, tokenFile)} -H 'Content-Type: application/json' --data-binary @${shellQuote(file === '-' ? 'FILE' : resolve(file))} ${shellQuote(`${url}/api/v1/targets/${target}/transactions/${scopeOnly ? '?scope_only=true' : ''}`)}`,
  ).catch((err) => {
    input.destroy();
    throw err;
  });
  let result;
  try {
    if (!store.state.targets.has(target)) throw new CommandError(`no target ${target} in ${dir}`);
    const evidence = await openEvidence({ dataDir: dir, store, log: (line) => logs.push(line) });
    try {
      result = await evidence.importExchanges(target, readHar(input as AsyncIterable<Buffer>), { scopeOnly });
    } catch (err) {
      if (err instanceof HarError) throw new CommandError(`${file}: ${err.message}`);
      throw err;
    } finally {
      await evidence.close();
    }
  } catch (err) {
    throw namingDataDir(err, dir);
  } finally {
    input.destroy();
    await store.close();
  }
  if (!result.ok) throw new CommandError(`no target ${target} in ${dir}`);
  for (const line of logs) io.err(line);
  const { imported, out_of_scope: outOfScope, skipped } = result.counts;
  const notes = [`${outOfScope} out of scope${scopeOnly ? ', left out' : ''}`, `${skipped} skipped`].join(', ');
  await io.out(`imported ${imported} transaction${imported === 1 ? '' : 's'} (${notes}) into target ${target} of ${dir}\n`);
}

const COMMANDS = { export: exportCommand, import: importCommand, 'import-har': importHarCommand };

/** Runs `export`, `import` or `import-har` (argv[0]); returns the exit code: 0 done, 1 refused (one line said why). */
export async function runCommand(argv: string[], env: NodeJS.ProcessEnv, io: Output = processOutput): Promise<number> {
  const [command, ...rest] = argv;
  try {
    await COMMANDS[command as keyof typeof COMMANDS](rest, env, io);
    return 0;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // one line, no stack trace: the message says what to fix
    const message = err instanceof CommandError || !e.code || e.message.includes(e.code) ? e.message : `${e.message} (${e.code})`;
    io.err(`${command}: ${message.split('\n')[0]}`);
    return 1;
  }
}
