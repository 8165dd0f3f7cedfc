/** The assessment engine, opened for a store: its catalogue, its workers, and what a crash left. */
import { join } from 'node:path';
import { realpathSync } from 'node:fs';
import { IN_SEA, jsonFilesIn, PLUGINS_DIR, shippedPluginFiles } from '../paths.js';
import type { Evidence } from '../evidence/store.js';
import type { Store } from '../store/store.js';
import { loadCatalogue, type Catalogue } from './catalogue.js';
import { CHECK_NAMES } from './checks/names.js';
import { recoverRuns } from './recovery.js';
import { createEngine, type Engine } from './scheduler.js';

export type { Engine } from './scheduler.js';

export interface OpenEngineOptions {
  store: Store;
  dataDir: string;
  workers: number;
  runTimeoutMs: number;
  checkTimeoutMs?: number;
  maxOutputBytes?: number;
  /** The transaction store: grep plugins read it. */
  evidence?: Evidence;
  log: (line: string) => void;
}

/**
 * The shipped plugins and the user's (DATA_DIR/plugins); throws a PluginFileError naming a bad user
 * file. Without user files, the shipped ones (which the tests check) are read when first needed,
 * not on the way to the first answer: they would add a tenth to the start-up.
 */
export function readCatalogue(dataDir: string, log?: (line: string) => void): Catalogue {
  const userDir = join(dataDir, 'plugins');
  // in a clone the default data directory is the project's data/: its plugins/ are the shipped ones
  const user = !IN_SEA && sameDir(userDir, PLUGINS_DIR) ? [] : (jsonFilesIn(userDir) ?? []);
  const load = () => loadCatalogue(shippedPluginFiles(), user, new Set(CHECK_NAMES), log);
  return user.length > 0 ? load() : lazyCatalogue(load);
}

function lazyCatalogue(load: () => Catalogue): Catalogue {
  let loaded: Catalogue | undefined;
  const catalogue = () => (loaded ??= load());
  return {
    get plugins() {
      return catalogue().plugins;
    },
    get testGroups() {
      return catalogue().testGroups;
    },
    get: (key) => catalogue().get(key),
    testGroup: (code) => catalogue().testGroup(code),
    filter: (filter) => catalogue().filter(filter),
  };
}

function sameDir(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** Reads the catalogue, ends what a crashed server left running (requeuing its works), starts the workers. */
export async function openEngine(options: OpenEngineOptions, catalogue = readCatalogue(options.dataDir, options.log)): Promise<Engine> {
  await recoverRuns(options.store, options.dataDir, options.log);
  const engine = createEngine({ ...options, catalogue });
  // works left queued by the last run start at once; with none, the catalogue waits for its first use
  if (options.store.state.works.size > 0) engine.kick();
  return engine;
}
