/**
 * The plugin catalogue: the files shipped with the product, then the user's (DATA_DIR/plugins),
 * each checked by one validator. A file that does not parse, or a plugin that is not valid, stops
 * the start with a message naming the file.
 */
import { basename } from 'node:path';
import type { PluginFile } from '../paths.js';
import { GrepRuleError, readGrepRules } from '../evidence/grep-rules.js';
import { unknownPlaceholders } from './template.js';
import { PLUGIN_GROUPS, PLUGIN_TYPES, type CatalogueEntry, type Plugin, type PluginAction, type PluginGroup, type TestGroup } from './types.js';

/** The parsers a program's output may go through. */
export const PARSERS = ['nmap-xml'] as const;

export class PluginFileError extends Error {
  readonly code = 'ERR_PLUGIN_FILE';
  constructor(file: string, problem: string) {
    super(`plugin file ${file}: ${problem}`);
  }
}

export interface PluginFilter {
  group?: string[];
  type?: string[];
  code?: string[];
  name?: string[];
}

export interface Catalogue {
  /** Every plugin: by group, then type, then the test groups' order. */
  readonly plugins: readonly Plugin[];
  readonly testGroups: readonly TestGroup[];
  get(key: string): CatalogueEntry | undefined;
  testGroup(code: string): TestGroup | undefined;
  /** Each filter any-of (codes and names compared without regard to case). */
  filter(filter: PluginFilter): Plugin[];
}

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const isText = (v: unknown, max = 256): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;
const CODE = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
const CONFIG_KEY = /^[A-Z][A-Z0-9_-]*$/;
/** Links a page shows: the web's own schemes only (never `javascript:` or `data:`). */
const WEB_URL = /^https?:\/\/[^\s]/i;

/**
 * Reads every file; `knownChecks` names the built-in checks a semi_passive plugin may use. `log`
 * hears, for each file, how many plugins and test groups it added.
 */
export function loadCatalogue(shipped: PluginFile[], user: PluginFile[], knownChecks: ReadonlySet<string>, log?: (line: string) => void): Catalogue {
  const groups = new Map<string, TestGroup>();
  const groupFiles = new Map<string, string>();
  const entries = new Map<string, CatalogueEntry>();
  const entryFiles = new Map<string, string>();
  const pending: { raw: Raw; file: string; index: number }[] = [];
  const added = new Map<string, { plugins: number; groups: number }>();
  for (const { file, text, problem } of [...shipped, ...user]) {
    if (problem !== undefined) throw new PluginFileError(file, problem);
    added.set(file, { plugins: 0, groups: 0 });
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new PluginFileError(file, `not valid JSON (${(err as Error).message})`);
    }
    if (!isObject(doc)) throw new PluginFileError(file, 'expected a JSON object with "plugins" and/or "test_groups"');
    const stray = strayFields(doc, FILE_FIELDS);
    if (stray) throw new PluginFileError(file, `${stray}: a plugin file holds "plugins" and "test_groups" only`);
    const { plugins = [], test_groups: testGroups = [] } = doc;
    if (!Array.isArray(plugins) || !Array.isArray(testGroups)) throw new PluginFileError(file, '"plugins" and "test_groups" must be arrays');
    testGroups.forEach((raw: unknown, i) => {
      const group = readTestGroup(raw, file, i);
      const first = groupFiles.get(group.code);
      if (first !== undefined) {
        throw new PluginFileError(file, `test_groups[${i}]: test group ${group.code} is defined twice, here and in ${first}: a file may use a test group another file defines without repeating it; for a test of your own, choose a new code`);
      }
      groups.set(group.code, group);
      groupFiles.set(group.code, file);
      added.get(file)!.groups++;
    });
    plugins.forEach((raw: unknown, index) => {
      if (!isObject(raw)) throw new PluginFileError(file, `plugins[${index}] must be an object`);
      pending.push({ raw, file, index });
    });
  }
  for (const { raw, file, index } of pending) {
    const entry = readPlugin(raw, file, index, groups, knownChecks);
    const { key } = entry.plugin;
    const first = entryFiles.get(key);
    if (first !== undefined) {
      throw new PluginFileError(
        file,
        `plugins[${index}]: ${key} is defined twice, here and in ${first}: one plugin per type and code. To run another program for this test, give your plugin a new code (with its own test group); to change what a shipped plugin runs, change its tool's configuration value (PATCH /api/v1/configuration/)`,
      );
    }
    entries.set(key, entry);
    entryFiles.set(key, file);
    added.get(file)!.plugins++;
  }
  if (log) for (const [file, n] of added) log(`plugin file ${file}: ${n.plugins} plugin(s), ${n.groups} test group(s)`);
  const order = new Map([...groups.keys()].map((code, i) => [code, i]));
  const rank = (p: Plugin) => [PLUGIN_GROUPS.indexOf(p.group), PLUGIN_TYPES[p.group].indexOf(p.type), order.get(p.code) ?? Infinity] as const;
  const plugins = [...entries.values()].map((e) => e.plugin).sort((a, b) => {
    const [ra, rb] = [rank(a), rank(b)];
    for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i] - rb[i];
    return a.code < b.code ? -1 : a.code > b.code ? 1 : 0;
  });
  const testGroups = [...groups.values()];
  return {
    plugins,
    testGroups,
    get: (key) => entries.get(key),
    testGroup: (code) => groups.get(code),
    filter(filter) {
      const lower = (values?: string[]) => values && new Set(values.map((v) => v.toLowerCase()));
      const [codes, names] = [lower(filter.code), lower(filter.name)];
      return plugins.filter(
        (p) =>
          (!filter.group || filter.group.includes(p.group)) &&
          (!filter.type || filter.type.includes(p.type)) &&
          (!codes || codes.has(p.code.toLowerCase())) &&
          (!names || names.has(p.name.toLowerCase())),
      );
    },
  };
}

function readTestGroup(raw: unknown, file: string, i: number): TestGroup {
  const where = `test_groups[${i}]`;
  if (!isObject(raw)) throw new PluginFileError(file, `${where} must be an object`);
  const stray = strayFields(raw, GROUP_FIELDS);
  if (stray) throw new PluginFileError(file, `${where}: ${stray}`);
  const { code, group, priority, descrip, hint = '', url = '', mappings = {} } = raw;
  if (typeof code !== 'string' || !CODE.test(code)) throw new PluginFileError(file, `${where}: "code" must be a code such as OWTF-IG-001`);
  if (!PLUGIN_GROUPS.includes(group as PluginGroup)) throw new PluginFileError(file, `${where} (${code}): "group" must be one of ${PLUGIN_GROUPS.join(', ')}`);
  if (!Number.isInteger(priority)) throw new PluginFileError(file, `${where} (${code}): "priority" must be an integer`);
  if (!isText(descrip) || typeof hint !== 'string' || typeof url !== 'string') {
    throw new PluginFileError(file, `${where} (${code}): "descrip" must be a non-empty string, "hint" and "url" strings`);
  }
  if (url !== '' && !WEB_URL.test(url)) throw new PluginFileError(file, `${where} (${code}): "url" must be an http:// or https:// address`);
  const pairs = isObject(mappings) && Object.values(mappings).every((m) => Array.isArray(m) && m.length === 2 && m.every((s) => typeof s === 'string'));
  if (!pairs) throw new PluginFileError(file, `${where} (${code}): "mappings" must map names to [code, name] pairs`);
  return { code, group: group as PluginGroup, priority: priority as number, descrip, hint, url, mappings: mappings as TestGroup['mappings'] };
}

/**
 * The plugin a key names, or a stand-in built from the key (`<type>@<code>`) when the catalogue no
 * longer holds it (a plugin file removed while works or outputs still name it).
 */
export function pluginOrStandIn(catalogue: Catalogue, key: string): Plugin {
  const entry = catalogue.get(key);
  if (entry) return entry.plugin;
  const [type = '', code = key] = key.split('@');
  return { key, code, group: 'web', type, name: key, title: key, descrip: 'no longer in the catalogue', file: '', attr: null, min_time: null };
}

const ACTION_KEYS = ['checklist', 'links', 'check', 'argv', 'grep'] as const;
type ActionKey = (typeof ACTION_KEYS)[number];
/** A program's fields beside its argv: on a plugin of another type, a program half described (never run). */
const PROGRAM_FIELDS = ['tool', 'program', 'parser', 'timeout', 'success_exit_codes'] as const;

/**
 * The one action each type takes (docs/PLUGINS.md): external a checklist; passive links, nothing
 * sent to the target; semi_passive a built-in check; active, bruteforce (and the auxiliary
 * launchers) a program; grep its rules over the target's stored transactions (nothing is sent).
 */
const ACTION_OF_TYPE: Record<string, ActionKey> = {
  external: 'checklist',
  passive: 'links',
  semi_passive: 'check',
  active: 'argv',
  bruteforce: 'argv',
  exploit: 'argv',
  dos: 'argv',
  se: 'argv',
  rce: 'argv',
  smb: 'argv',
  wafbypasser: 'argv',
  grep: 'grep',
};

const ACTION_WORDS: Record<ActionKey, string> = {
  checklist: '"checklist" (a manual checklist)',
  links: '"links" (links to public resources: nothing is sent to the target)',
  check: '"check" (a built-in check)',
  argv: '"argv" with "tool" or "program" (a program)',
  grep: '"grep" (its rules over the target\'s transactions)',
};

/** `an active`, `a passive`: a type with its article, for messages. */
const withArticle = (type: string) => `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;

/** The fields every plugin has (docs/PLUGINS.md, "Every plugin has these fields"). */
const REQUIRED_TEXT = ['name', 'title', 'descrip'] as const;

/** The fields each object of a plugin file may have: another (`timout`, `argvv`) is a mistake that would go unnoticed. */
const FILE_FIELDS = new Set(['plugins', 'test_groups']);
const GROUP_FIELDS = new Set(['code', 'group', 'priority', 'descrip', 'hint', 'url', 'mappings']);
const PLUGIN_FIELDS = new Set(['code', 'group', 'type', 'attr', ...REQUIRED_TEXT, ...ACTION_KEYS, ...PROGRAM_FIELDS]);

/** What is wrong with an object's fields beyond `known` (unknown ones named), or undefined. */
function strayFields(raw: Raw, known: ReadonlySet<string>): string | undefined {
  const stray = Object.keys(raw).filter((key) => !known.has(key));
  if (stray.length === 0) return undefined;
  return `unknown field${stray.length > 1 ? 's' : ''} ${stray.slice(0, 5).map((key) => JSON.stringify(key.slice(0, 40))).join(', ')} (a misspelt one is ignored otherwise)`;
}

function readPlugin(raw: Raw, file: string, index: number, groups: Map<string, TestGroup>, knownChecks: ReadonlySet<string>): CatalogueEntry {
  const fail = (problem: string): never => {
    throw new PluginFileError(file, `plugins[${index}]${typeof raw.code === 'string' ? ` (${raw.code})` : ''}: ${problem}`);
  };
  const { code, group, type } = raw;
  const unknownFields = strayFields(raw, PLUGIN_FIELDS);
  if (unknownFields) fail(unknownFields);
  if (typeof code !== 'string' || !CODE.test(code)) fail('"code" must be a code such as OWTF-IG-001');
  if (!PLUGIN_GROUPS.includes(group as PluginGroup)) fail(`"group" must be one of ${PLUGIN_GROUPS.join(', ')}`);
  const types = PLUGIN_TYPES[group as PluginGroup];
  if (typeof type !== 'string' || !types.includes(type)) fail(`"type" must be one of ${types.join(', ')} in group ${group}`);
  const testGroup = groups.get(code as string);
  if (!testGroup) fail(`no test group has the code ${code} (add it to "test_groups")`);
  if (testGroup!.group !== group) fail(`test group ${code} is a ${testGroup!.group} one: a ${group} plugin needs a ${group} test group (a new code)`);
  for (const field of REQUIRED_TEXT) if (!isText(raw[field], 1024)) fail(`"${field}" is required: a non-empty string`);
  if (raw.attr !== undefined && raw.attr !== null && !isText(raw.attr, 1024)) fail('"attr" must be a non-empty string or null');
  const expected = ACTION_OF_TYPE[type as string];
  if (expected === undefined) fail(`a ${group}/${type} plugin has no action this build runs`);
  const present = ACTION_KEYS.filter((k) => raw[k] !== undefined);
  if (present.length !== 1 || present[0] !== expected) {
    const found = present.length === 0 ? 'none' : present.map((k) => `"${k}"`).join(' and ');
    fail(`${withArticle(type as string)} plugin's action is ${ACTION_WORDS[expected!]}, and only that: found ${found}`);
  }
  const stray = expected === 'argv' ? [] : PROGRAM_FIELDS.filter((k) => raw[k] !== undefined);
  if (stray.length > 0) fail(`${withArticle(type as string)} plugin runs no program: ${stray.map((k) => `"${k}"`).join(' and ')} belong to a program plugin's action`);
  const action = readAction(raw, expected!, type as string, fail, knownChecks);
  const plugin: Plugin = {
    key: `${type}@${code}`,
    code: code as string,
    group: group as PluginGroup,
    type: type as string,
    name: raw.name as string,
    title: raw.title as string,
    descrip: raw.descrip as string,
    file: basename(file),
    attr: (raw.attr as string | undefined) ?? null,
    min_time: null,
  };
  return { plugin, action };
}

function readAction(raw: Raw, kind: ActionKey, type: string, fail: (problem: string) => never, knownChecks: ReadonlySet<string>): PluginAction {
  const placeholders = (template: string, program: boolean, where: string) => {
    const unknown = unknownPlaceholders(template, program);
    if (unknown.length > 0) fail(`${where} names unknown placeholders: ${unknown.join(', ')}`);
  };
  switch (kind) {
    case 'checklist': {
      if (!isText(raw.checklist, 64 * 1024)) fail('"checklist" must be a non-empty string');
      placeholders(raw.checklist as string, false, '"checklist"');
      return { kind: 'checklist', text: raw.checklist as string };
    }
    case 'links': {
      const links = raw.links;
      if (!Array.isArray(links) || links.length === 0 || !links.every((l) => isObject(l) && isText(l.title) && isText(l.url, 2048))) {
        fail('"links" must be a non-empty array of {"title", "url"}');
      }
      for (const link of links as { title: string; url: string }[]) {
        placeholders(link.url, false, `link ${JSON.stringify(link.title)}`);
        if (!WEB_URL.test(link.url)) fail(`link ${JSON.stringify(link.title)}: "url" must begin with http:// or https://`);
      }
      return { kind: 'links', links: (links as { title: string; url: string }[]).map(({ title, url }) => ({ title, url })) };
    }
    case 'check': {
      if (type !== 'semi_passive') fail('"check" is for semi_passive plugins');
      if (typeof raw.check !== 'string' || !knownChecks.has(raw.check)) fail(`"check" must name a built-in check: ${[...knownChecks].join(', ')}`);
      return { kind: 'check', check: raw.check as string };
    }
    case 'grep': {
      if (type !== 'grep') fail('"grep" is for grep plugins');
      try {
        return { kind: 'grep', rules: readGrepRules(raw.grep) };
      } catch (err) {
        if (err instanceof GrepRuleError) fail(err.message);
        throw err;
      }
    }
    case 'argv': {
      const { tool, program, argv, parser, timeout, success_exit_codes: codes } = raw;
      if (tool === undefined && program === undefined) fail('a program plugin names "tool" (a configuration key such as TOOL_NMAP) or "program" (a path)');
      if (tool !== undefined && (typeof tool !== 'string' || !CONFIG_KEY.test(tool))) fail('"tool" must be a configuration key such as TOOL_NMAP');
      if (program !== undefined && !isText(program, 4096)) fail('"program" must be a path or a program name');
      if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string' && a.length <= 4096) || argv.length > 256) fail('"argv" must be an array of strings');
      (argv as string[]).forEach((a, i) => placeholders(a, true, `argv[${i}]`));
      if (parser !== undefined && !PARSERS.includes(parser as (typeof PARSERS)[number])) fail(`"parser" must be one of ${PARSERS.join(', ')}`);
      if (timeout !== undefined && !(Number.isInteger(timeout) && (timeout as number) > 0)) fail('"timeout" must be a positive number of seconds');
      const exitCode = (c: unknown) => Number.isInteger(c) && (c as number) >= 0 && (c as number) <= 255;
      if (codes !== undefined && !(Array.isArray(codes) && codes.length > 0 && codes.length <= 256 && codes.every(exitCode))) {
        fail('"success_exit_codes" must be a non-empty array of exit statuses (integers 0 to 255)');
      }
      return {
        kind: 'program',
        ...(tool === undefined ? {} : { tool: tool as string }),
        ...(program === undefined ? {} : { program: program as string }),
        argv: argv as string[],
        ...(parser === undefined ? {} : { parser: parser as string }),
        ...(timeout === undefined ? {} : { timeout: timeout as number }),
        ...(codes === undefined ? {} : { successExitCodes: [...new Set(codes as number[])] }),
      };
    }
  }
}
