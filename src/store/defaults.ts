/** The embedded default configuration: the framework's settings and tool paths. */
import { readFileSync } from 'node:fs';
import type { DefaultItem } from './configuration.js';
import { DataFileError } from './state.js';

/** Read synchronously: it is read once, at start-up, before anything is served. */
export function loadDefaults(file: string): DefaultItem[] {
  let doc: { items?: unknown };
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new DataFileError(file, (err as Error).message);
  }
  const items = doc.items;
  const valid = (i: unknown): i is DefaultItem =>
    typeof i === 'object' && i !== null &&
    ['key', 'value', 'section', 'descrip'].every((k) => typeof (i as Record<string, unknown>)[k] === 'string');
  if (!Array.isArray(items) || !items.every(valid)) {
    throw new DataFileError(file, 'expected {"items": [{"key","value","section","descrip"}]}');
  }
  return items;
}
