/** The embedded default configuration: the framework's settings and tool paths. */
import type { DefaultItem } from './configuration.js';
import { DataFileError } from './state.js';

/** Parses the defaults' text; `file` names it in messages. */
export function parseDefaults(text: string, file: string): DefaultItem[] {
  let doc: { items?: unknown };
  try {
    doc = JSON.parse(text);
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
