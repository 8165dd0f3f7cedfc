/** The assessment engine, opened for a store: its catalogue, its workers, and what a crash left. */
import { join } from 'node:path';
import { jsonFilesIn, shippedPluginFiles } from '../paths.js';
import type { Store } from '../store/store.js';
import { loadCatalogue, type Catalogue } from './catalogue.js';
import { CHECKS } from './checks/index.js';
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
  log: (line: string) => void;
}

/** The shipped plugins and the user's (DATA_DIR/plugins); throws a PluginFileError naming a bad file. */
export function readCatalogue(dataDir: string): Catalogue {
  return loadCatalogue(shippedPluginFiles(), jsonFilesIn(join(dataDir, 'plugins')) ?? [], new Set(Object.keys(CHECKS)));
}

/** Loads the catalogue, ends what a crashed server left running (requeuing its works), starts the workers. */
export async function openEngine(options: OpenEngineOptions, catalogue = readCatalogue(options.dataDir)): Promise<Engine> {
  await recoverRuns(options.store, options.dataDir, options.log);
  const engine = createEngine({ ...options, catalogue });
  engine.kick();
  return engine;
}
