/**
 * Where the product's own files come from: the project's folders (from src/ under tsx, or dist/
 * compiled), or, in the single executable, the assets embedded in it.
 */
import { isUtf8 } from 'node:buffer';
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DefaultItem } from './store/configuration.js';
import { makeDirectories, readDataFile } from './store/data-file.js';
import { parseDefaults } from './store/defaults.js';

// Set by the single-executable build (src/build-sea.ts) through esbuild's `define`; absent elsewhere.
declare const ASSESSD_SEA: boolean | undefined;
declare const ASSESSD_VERSION: string | undefined;
declare const ASSESSD_WEB_FILES: string[] | undefined;
declare const ASSESSD_PLUGIN_FILES: string[] | undefined;
declare const ASSESSD_SHIPPED_FILES: string[] | undefined;

/** Whether this is the single executable (everything embedded, no project folder beside it). */
export const IN_SEA = typeof ASSESSD_SEA !== 'undefined' && ASSESSD_SEA;

export const PROJECT_ROOT = IN_SEA ? dirname(process.execPath) : fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_CONFIGURATION_FILE = join(PROJECT_ROOT, 'data', 'default-configuration.json');
export const WEB_ASSETS_DIR = join(PROJECT_ROOT, 'dist', 'web', 'static');
export const PLUGINS_DIR = join(PROJECT_ROOT, 'data', 'plugins');
/** The folders of data/ that default configuration values name (`{data}/...`): in the package and the single executable too. */
export const SHIPPED_DATA_DIRS = ['wordlists', 'attack-vectors', 'set-phishing'];

/**
 * The data directory without --data-dir: the project's data/ in a checkout (`npm start`);
 * ./assessd-data in the current directory for an installed package (node_modules is no place for
 * data); assessd-data beside the single executable, so that a copied file keeps its store with it.
 */
export const DEFAULT_DATA_DIR = IN_SEA
  ? join(dirname(process.execPath), 'assessd-data')
  : PROJECT_ROOT.includes(`${sep}node_modules${sep}`)
    ? resolve('assessd-data')
    : join(PROJECT_ROOT, 'data');

function seaAsset(name: string): Buffer {
  // required here, not imported: node:sea exists from Node 20.12, and only the single executable (CommonJS) has it
  const { getRawAsset } = require('node:sea') as { getRawAsset(name: string): ArrayBuffer };
  return Buffer.from(getRawAsset(name));
}

const notBuilt = () => new Error(`the web application is not built in ${WEB_ASSETS_DIR}: run npm run build`);

/** Throws unless the web application is built (its files are read when first needed: webFiles). */
export function checkWebBuilt(): void {
  if (!IN_SEA && !statSync(join(WEB_ASSETS_DIR, 'index.html'), { throwIfNoEntry: false })?.isFile()) throw notBuilt();
}

/** The built web application's files by name (index.html, app.js, ...). */
export function webFiles(): Map<string, Buffer> {
  if (IN_SEA) return new Map((ASSESSD_WEB_FILES ?? []).map((name) => [name, seaAsset(`web/${name}`)]));
  let names: string[];
  try {
    names = readdirSync(WEB_ASSETS_DIR, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
  } catch {
    throw notBuilt();
  }
  // read synchronously, once (just after the start, or by the first page request): a handful of small reads cost less than their round trips
  return new Map(names.map((name) => [name, readFileSync(join(WEB_ASSETS_DIR, name))]));
}

/**
 * The embedded default configuration: its text, and a name for messages. A value beginning with
 * `{data}/` names a file shipped with the product (a wordlist...): it is given as the absolute path
 * of that file on this box, the project's or the package's data/ (the single executable writes its
 * copy into `dataDir`/shipped/ first).
 */
export function defaultConfiguration(dataDir = DEFAULT_DATA_DIR): { file: string; text: string } {
  const { file, text } = IN_SEA
    ? { file: 'default-configuration.json (embedded)', text: seaAsset('default-configuration.json').toString('utf8') }
    : { file: DEFAULT_CONFIGURATION_FILE, text: readFileSync(DEFAULT_CONFIGURATION_FILE, 'utf8') };
  if (!text.includes(SHIPPED_MARK)) return { file, text };
  const dir = IN_SEA ? writeShippedFiles(join(resolve(dataDir), 'shipped')) : join(PROJECT_ROOT, 'data');
  // inside a JSON string: the directory escaped as JSON escapes it
  return { file, text: text.replaceAll(SHIPPED_MARK, `"${JSON.stringify(dir).slice(1, -1)}/`) };
}

/**
 * The default configuration's items, for the store. The single executable writes its shipped
 * files into `dataDir` as it reads them: call this once the directory is this process's (its lock
 * held), as the store's `defaults` function is.
 */
export function defaultItems(dataDir = DEFAULT_DATA_DIR): DefaultItem[] {
  const { text, file } = defaultConfiguration(dataDir);
  return parseDefaults(text, file);
}

/** How a default value names a shipped file: a JSON string beginning with `{data}/`. */
const SHIPPED_MARK = '"{data}/';

/** Writes the shipped files the single executable carries (wordlists...) under `dir`, those missing or changed; answers `dir`. */
function writeShippedFiles(dir: string): string {
  for (const name of ASSESSD_SHIPPED_FILES ?? []) {
    const path = join(dir, name);
    const bytes = seaAsset(`data/${name}`);
    // a FIFO or a directory there stops the start naming it (a FIFO's read would never end)
    if (readDataFile(path)?.equals(bytes)) continue;
    // the data directory too, when this is its first start: 0700 as the store makes it (it holds a client's scope)
    makeDirectories(dirname(path), 0o700);
    writeFileSync(path, bytes, { mode: 0o600 });
    // a file rewritten keeps its old mode (an earlier build wrote them 0644)
    chmodSync(path, 0o600);
  }
  return dir;
}

/** A plugin file: its name (for messages) and its text, or why it could not be read. */
export interface PluginFile {
  file: string;
  text: string;
  /** Why the file is not read (the start stops, naming it): not a regular file, or too large. */
  problem?: string;
}

/** A plugin file larger than this is refused, named (the shipped ones are a few hundred KB). */
export const MAX_PLUGIN_FILE_BYTES = 8 * 1024 * 1024;

/** The plugin files shipped with the product (data/plugins/*.json), by name. */
export function shippedPluginFiles(): PluginFile[] {
  if (IN_SEA) return (ASSESSD_PLUGIN_FILES ?? []).map((name) => ({ file: `${name} (embedded)`, text: seaAsset(`plugins/${name}`).toString('utf8') }));
  return jsonFilesIn(PLUGINS_DIR) ?? [];
}

/** The `.json` files of a directory, sorted by name; undefined when the directory does not exist. */
export function jsonFilesIn(dir: string): PluginFile[] | undefined {
  let names: string[];
  try {
    // every name ending in .json, whatever its case and whatever it is: a symlink is followed, and
    // what is not a file is said (never skipped without a word)
    names = readdirSync(dir).filter((name) => name.toLowerCase().endsWith('.json'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return names.sort().map((name) => readPluginFile(join(dir, name)));
}

function readPluginFile(file: string): PluginFile {
  let size: number;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) return { file, text: '', problem: 'not a regular file (a directory, a FIFO...): name a plugin file *.json only' };
    size = stats.size;
  } catch (err) {
    return { file, text: '', problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}: a symbolic link to nothing?)` };
  }
  if (size > MAX_PLUGIN_FILE_BYTES) return { file, text: '', problem: `${size} bytes, larger than the ${MAX_PLUGIN_FILE_BYTES / 1024 / 1024} MiB a plugin file may hold` };
  const bytes = readFileSync(file);
  // read as UTF-8, a byte that is not became U+FFFD silently: in a program's path or its argv too
  if (!isUtf8(bytes)) return { file, text: '', problem: 'not UTF-8 text (save it as UTF-8)' };
  // a byte-order mark (some editors write one) is no part of the JSON
  return { file, text: bytes.toString('utf8').replace(/^\uFEFF/, '') };
}

/** This build's version. */
export function version(): string {
  if (typeof ASSESSD_VERSION !== 'undefined') return ASSESSD_VERSION;
  return (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** How to start a worker thread: a script file, or its code (evaluated as CommonJS). */
export type WorkerSource = { file: string } | { code: string };

/**
 * The compaction worker, resolved here alone: `dist/compactor.js` beside the bundle; from the
 * TypeScript sources (tests under tsx), a bootstrap that registers tsx before importing the entry,
 * because Node 20 loads a worker's entry without the hooks of the parent's `--import tsx`. A
 * single executable carries the bundled worker's code as an asset (CommonJS, as `eval` runs it).
 */
export function compactionWorker(): WorkerSource {
  if (IN_SEA) return { code: seaAsset('compactor.cjs').toString('utf8') };
  if (!import.meta.url.endsWith('.ts')) return { file: join(PROJECT_ROOT, 'dist', 'compactor.js') };
  const entry = new URL('./store/compaction-worker.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return { code: `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });` };
}
