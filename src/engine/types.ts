/** The engine's vocabulary: plugins as their files say them, findings, ranks, test groups. */
import type { GrepRuleSpec } from '../evidence/grep-rules.js';
import type { Finding, Target } from '../store/state.js';
import type { Sent } from './checks/client.js';

export type { Finding };

/** `-1` unranked, `0` passing, `1` info, `2` low, `3` medium, `4` high, `5` critical. */
export const RANK_LABELS: Record<number, string> = {
  [-1]: 'Unranked',
  0: 'Passing',
  1: 'Info',
  2: 'Low',
  3: 'Medium',
  4: 'High',
  5: 'Critical',
};

export const MIN_RANK = -1;
export const MAX_RANK = 5;


export const PLUGIN_GROUPS = ['web', 'network', 'auxiliary'] as const;
export type PluginGroup = (typeof PLUGIN_GROUPS)[number];

/** The types each group may hold, in the order the catalogue lists them. */
export const PLUGIN_TYPES: Record<PluginGroup, readonly string[]> = {
  web: ['external', 'passive', 'semi_passive', 'active', 'grep'],
  network: ['active', 'bruteforce'],
  auxiliary: ['exploit', 'dos', 'se', 'rce', 'bruteforce', 'smb', 'wafbypasser'],
};

/** A plugin as the API shows it (the upstream shape). */
export interface Plugin {
  /** `<type>@<code>` */
  key: string;
  code: string;
  group: PluginGroup;
  type: string;
  name: string;
  title: string;
  descrip: string;
  /** The plugin file it came from (its base name). */
  file: string;
  attr: string | null;
  min_time: string | null;
}

/** A link of a passive plugin: placeholders (`{host_name}`...) filled from the target. */
export interface PluginLink {
  title: string;
  url: string;
}

/** What running a plugin does. */
export type PluginAction =
  /** external: the manual test's checklist, placeholders filled from the target. */
  | { kind: 'checklist'; text: string }
  /** passive: links to public resources about the target; no request is sent. */
  | { kind: 'links'; links: PluginLink[] }
  /** semi_passive: a check built into the server (its name, e.g. `robots`). */
  | { kind: 'check'; check: string }
  /**
   * active, bruteforce...: the program that is the configuration value of `tool` (or `program`,
   * when the configuration has no such key), with `argv` (each element a template: placeholders
   * are filled, never split, no shell). `successExitCodes`: the exit statuses that mean the
   * program did its work (default `[0]`); any other makes the run `Crashed`.
   */
  | { kind: 'program'; tool?: string; program?: string; argv: string[]; parser?: string; timeout?: number; successExitCodes?: number[] }
  /** grep: rules over the target's stored transactions (evidence/grep-rules.ts); nothing is sent. */
  | { kind: 'grep'; rules: GrepRuleSpec[] };

/** One plugin of the catalogue: what the API shows, and what running it does. */
export interface CatalogueEntry {
  plugin: Plugin;
  action: PluginAction;
}

/** A test group of the testing guide: the `details` of `GET .../poutput/names`. */
export interface TestGroup {
  code: string;
  group: PluginGroup;
  priority: number;
  descrip: string;
  hint: string;
  url: string;
  /** e.g. `{"OWASP_V4": ["WSTG-INFO-03", "Review Webserver Metafiles for Information Leakage"], "CWE": ["CWE-200", "..."]}` */
  mappings: Record<string, [string, string]>;
}

/**
 * The target fields a placeholder may name: `{target_url}`, `{host_name}`, `{host_ip}`,
 * `{port_number}`, `{url_scheme}`, `{host_path}`, `{ip_url}`, `{top_domain}`, `{top_url}`, and
 * `{host}` (the IP when known, else the name), plus `{output_dir}` for programs (the run's
 * output directory, absolute).
 */
export type TargetFields = Pick<Target, 'target_url' | 'host_name' | 'host_ip' | 'port_number' | 'url_scheme' | 'host_path' | 'ip_url' | 'top_domain' | 'top_url'>;

/** What a built-in check gets: the target, and a limit on its network time. */
export interface CheckInput {
  target: TargetFields;
  /** Milliseconds each request may take (connect to last byte). */
  timeoutMs: number;
  /** Aborts the check (a user's abort, a stop). */
  signal?: AbortSignal;
  /** The configuration's value of a key (the tls check reads TLS_CA_FILES). */
  config?: (key: string) => string | undefined;
  /** Every request the check sends is appended here with its answer (the runner stores them as the target's transactions). */
  transcript?: Sent[];
}

/** A check's finding, and the requests that show it: their indices in the input's transcript. */
export interface CheckFinding extends Finding {
  sent?: number[];
}

/** What a built-in check answers: its findings (the rank is the highest), and a text summary. */
export type CheckResult =
  | { status: 'Successful'; findings: CheckFinding[]; summary: string }
  | { status: 'Skipped'; reason: string };

export type Check = (input: CheckInput) => Promise<CheckResult>;
