/** Pure functions over the configuration items of a State. */
import { OK } from './result.js';
import { sortedConfig, type ConfigItem, type State } from './state.js';

/** An item of the embedded default configuration. */
export interface DefaultItem {
  key: string;
  value: string;
  section: string;
  descrip: string;
}

/**
 * Start-up merge: new keys are added; items not dirty take the default's value, section and
 * description; dirty items keep the user's value. Items the defaults no longer name are kept.
 * Returns whether anything changed.
 */
export function mergeDefaults(state: State, defaults: DefaultItem[]): boolean {
  let changed = false;
  const merged = new Map(state.config);
  for (const d of defaults) {
    const current = merged.get(d.key);
    const next: ConfigItem = current?.dirty
      ? { ...current, section: d.section, descrip: d.descrip }
      : { key: d.key, value: d.value, section: d.section, descrip: d.descrip, dirty: false };
    if (!current || current.value !== next.value || current.section !== next.section || current.descrip !== next.descrip) {
      merged.set(d.key, next);
      changed = true;
    }
  }
  if (changed) state.config = sortedConfig(merged.values());
  return changed;
}

export interface ConfigQuery {
  key?: string[];
  section?: string[];
  dirty?: boolean;
}

/** Items ordered by key, each filter any-of. */
export function listConfig(state: State, query: ConfigQuery = {}): ConfigItem[] {
  const keys = query.key && new Set(query.key);
  const sections = query.section && new Set(query.section);
  const items: ConfigItem[] = [];
  for (const item of state.config.values()) {
    if (keys && !keys.has(item.key)) continue;
    if (sections && !sections.has(item.section)) continue;
    if (query.dirty !== undefined && item.dirty !== query.dirty) continue;
    items.push(item);
  }
  return items;
}

/** All or nothing: one unknown key and nothing changes. Every patched item becomes dirty. */
export function patchConfig(
  state: State,
  values: [key: string, value: string][],
): { ok: true } | { ok: false; reason: 'unknown-keys'; unknown: string[] } {
  const unknown = [...new Set(values.map(([key]) => key).filter((key) => !state.config.has(key)))];
  if (unknown.length > 0) return { ok: false, reason: 'unknown-keys', unknown };
  for (const [key, value] of values) {
    const item = state.config.get(key)!;
    state.config.set(key, { ...item, value, dirty: true });
  }
  return OK;
}
