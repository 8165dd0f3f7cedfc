/** Placeholders (`{host_name}`, `{output_dir}`, `{config:KEY}`) filled from a target: text for people, argv for programs. */
import type { TargetFields } from './types.js';

const TARGET_FIELDS = new Set(['target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url', 'top_domain', 'top_url', 'host']);
const PLACEHOLDER = /\{([a-z_]+|config:[A-Za-z0-9_.-]+)\}/g;
const ANY_BRACE_WORD = /\{[^{}\s]*\}/g;

/** The placeholders a template names that no target, run or configuration fills: `[]` when all are known. */
export function unknownPlaceholders(template: string, program: boolean): string[] {
  const unknown: string[] = [];
  for (const [whole] of template.matchAll(ANY_BRACE_WORD)) {
    const name = whole.slice(1, -1);
    const known = TARGET_FIELDS.has(name) || (program && (name === 'output_dir' || /^config:[A-Za-z0-9_.-]+$/.test(name)));
    if (!known) unknown.push(whole);
  }
  // a brace of no placeholder (`{ host_name }`, a lone `{`) would be sent as written: a typo unseen
  const stray = /[{}]/.exec(template.replace(ANY_BRACE_WORD, ''));
  if (stray) unknown.push(`a "${stray[0]}" that begins or ends no placeholder`);
  return unknown;
}

export interface FillContext {
  target: TargetFields;
  /** The run's output directory (programs only). */
  outputDir?: string;
  config?: (key: string) => string | undefined;
}

function value(name: string, ctx: FillContext): string | undefined {
  if (name === 'host') return ctx.target.host_ip || ctx.target.host_name;
  if (name === 'output_dir') return ctx.outputDir;
  if (name.startsWith('config:')) return ctx.config?.(name.slice(7));
  return TARGET_FIELDS.has(name) ? ctx.target[name as keyof TargetFields] : undefined;
}

/** A text for people: every placeholder replaced (one with no value stays as written), each value through `escape`. */
export function fillText(template: string, ctx: FillContext, escape: (value: string) => string = (v) => v): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const v = value(name, ctx);
    return v === undefined ? whole : escape(v);
  });
}

const SHELL_SAFE = /^[A-Za-z0-9_./:@%+=,-]*$/;
/** What a shell reads as it is between double quotes (`!`: an interactive shell's history). */
const DOUBLE_QUOTE_SAFE = /^[^$`"\\!]*$/;

/**
 * A value as a shell reads it back unchanged: as it is when it holds nothing a shell interprets,
 * else in single quotes. A checklist's commands are copied into a terminal: a target URL with
 * `;`, `$(...)` or `&` must stay one inert argument there too.
 */
export function shellQuote(value: string): string {
  return SHELL_SAFE.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * A checklist's commands, each value quoted for where the placeholder stands in its line: a shell
 * reads the line back with the value as one inert piece of the word it is in. A template may
 * already quote a placeholder (`ffuf -u '{target_url}?FUZZ=1'`): a value quoted again there would
 * close the template's quotes and open a `$(...)` to the shell. So inside `'...'` a value only has
 * its `'` written as `'\''`; inside `"..."` its quotes close, it comes single-quoted, and they
 * open again; elsewhere it is single-quoted. A value with nothing a shell reads is left as it is.
 * Each line is read on its own (a checklist's command is one line; prose around them is read too,
 * where an apostrophe only changes how a value is shown).
 */
export function fillCommands(template: string, ctx: FillContext): string {
  let quote: '' | "'" | '"' = '';
  let scanned = 0;
  /** The quote open at `at`, reading on from the last placeholder. */
  const quoteAt = (at: number) => {
    for (let i = scanned; i < at; i++) {
      const c = template[i];
      if (c === '\n') quote = '';
      else if (quote === "'") {
        if (c === "'") quote = '';
      } else if (c === '\\') i++;
      else if (quote === '"') {
        if (c === '"') quote = '';
      } else if (c === "'" || c === '"') quote = c;
    }
    scanned = at;
    return quote;
  };
  return template.replace(PLACEHOLDER, (whole, name: string, at: number) => {
    const v = value(name, ctx);
    const open = quoteAt(at);
    scanned = at + whole.length;
    if (v === undefined) return whole;
    if (SHELL_SAFE.test(v)) return v;
    if (open === "'") return v.replace(/'/g, `'\\''`);
    if (open === '"') return DOUBLE_QUOTE_SAFE.test(v) ? v : `"${shellQuote(v)}"`;
    return shellQuote(v);
  });
}

export type FilledArgv = { ok: true; argv: string[] } | { ok: false; reason: string };

/** Why a placeholder has no value, and how to give it one. */
function noValue(name: string, ctx: FillContext): string {
  if (name === 'host_ip' || name === 'ip_url') {
    return `{${name}} has no value: ${ctx.target.host_name} did not resolve to an address (neither when the target was added nor now): add the name to /etc/hosts or DNS and run the plugin again, or write {host} in the plugin (the address when known, else the name)`;
  }
  if (name.startsWith('config:')) {
    const key = name.slice(7);
    return ctx.config?.(key) === undefined
      ? `{${name}} has no value: ${key} is not a configuration item (the plugin must name one that GET /api/v1/configuration lists)`
      : `{${name}} is empty: set ${key} with PATCH /api/v1/configuration/ (${key}=<value>)`;
  }
  return `{${name}} has no value for this target (${ctx.target.target_url})`;
}

/**
 * A program's argv: each template element stays one element (nothing is split, no shell sees it).
 * Refused when a substituted value begins with `-` (the program would read it as an option) or
 * has no value.
 */
export function fillArgv(templates: string[], ctx: FillContext): FilledArgv {
  const argv: string[] = [];
  for (const template of templates) {
    let problem: string | undefined;
    const filled = template.replace(PLACEHOLDER, (whole, name: string) => {
      const v = value(name, ctx);
      if (v === undefined || v === '') problem ??= noValue(name, ctx);
      else if (v.startsWith('-')) problem ??= `${whole} is ${JSON.stringify(v)}, which begins with "-" and would be read as an option`;
      return v ?? '';
    });
    if (problem) return { ok: false, reason: problem };
    argv.push(filled);
  }
  return { ok: true, argv };
}
