/**
 * One run of a plugin on a target, whatever the plugin does: a checklist or links (nothing to
 * send), a built-in check (the server's own requests), or a program (its process group). Answers
 * how the run ended, as the output will record it.
 */
import { join } from 'node:path';
import type { GrepRuleSpec } from '../evidence/grep-rules.js';
import type { Evidence } from '../evidence/store.js';
import { fsPromises } from '../lazy-builtins.js';
import type { RunEnd } from '../store/engine.js';
import type { Finding, Target } from '../store/state.js';
import { notOneHost } from '../store/targets.js';
import type { Sent } from './checks/client.js';
import type { CheckName } from './checks/names.js';
import { highestRank } from './findings.js';
import { checkProgram, RUN_MARKER_VARIABLE } from './proc.js';
import { readRegularFile } from './regular-file.js';
import { stripTerminalEscapes } from './terminal-text.js';
import type { RunEnd as ProgramEnd, RunHandle as ProgramHandle } from './process-group.js';
import { fillArgv } from './template.js';
import type { CatalogueEntry } from './types.js';

export interface RunContext {
  entry: CatalogueEntry;
  target: Target;
  /** Absolute: DATA_DIR/outputs/<output_path>. */
  outputDir: string;
  /** DATA_DIR/outputs: the run's files are read through no symlink from there. */
  outputsDir?: string;
  config: (key: string) => string | undefined;
  runTimeoutMs: number;
  checkTimeoutMs: number;
  maxOutputBytes: number;
  /** Ends a built-in check (a program is ended through its handle). */
  signal: AbortSignal;
  /** The environment programs get (the server's, without its token). */
  env: NodeJS.ProcessEnv;
  /** Called once the program runs: its handle (for pause, resume, abort) and process group. */
  onProgram(handle: ProgramHandle): void;
  /** The target with its host's addresses, looked up (and kept) when it has none yet. */
  resolveAddresses?(target: Target): Promise<Target>;
  /** The transaction store, that grep plugins read and the built-in checks' requests go to. */
  evidence?: Evidence;
  /** The server's log (a check's requests that could not be stored). */
  log?: (line: string) => void;
}

/** Placeholders that need the host's address: a target added by name without one gets it looked up. */
const NEEDS_ADDRESS = /\{(?:host_ip|ip_url)\}/;

/** How a run ended, as its output will record it (the op without its ids and time). */
export type RunOutcome = Omit<RunEnd, 'output' | 'at'> & {
  /** The run was cut short by an abort: its `error` says by whom. */
  aborted?: boolean;
};

const MAX_PARSED_FILE = 32 * 1024 * 1024;

export const skipped = (reason: string): RunOutcome => ({ status: 'Skipped', owtfRank: -1, findings: [], exitCode: null, error: reason });


export async function runPlugin(ctx: RunContext): Promise<RunOutcome> {
  const { action } = ctx.entry;
  switch (action.kind) {
    case 'checklist':
    case 'links':
      // the guidance is the output, rendered for the target when read: the tester ranks it
      return { status: 'Successful', owtfRank: -1, findings: [], exitCode: null, error: null };
    case 'check':
      return runCheck(ctx, action.check);
    case 'program':
      return runTool(ctx, action);
    case 'grep':
      return runGrepRules(ctx, action.rules);
  }
}

/** A grep plugin: its rules over the target's transactions as they are now. */
async function runGrepRules(ctx: RunContext, rules: GrepRuleSpec[]): Promise<RunOutcome> {
  const { evidence } = ctx;
  if (!evidence) return skipped('this server keeps no transactions');
  const loaded = await evidence.load(ctx.target.id);
  if (loaded.index.live === 0) return skipped('the target has no transactions yet: import a HAR, or browse it through the proxy, then run it again');
  const { runGrep } = await import('../evidence/grep.js');
  const { SearchTimeout } = await import('../evidence/regex.js');
  try {
    const result = await runGrep({ loaded, read: (s, p, l) => evidence.read(s, p, l), rules, signal: ctx.signal, deadline: performance.now() + ctx.runTimeoutMs });
    if (result.read === 0) return skipped(`none of the target's ${loaded.index.live} transactions is in its scope with a response: nothing to grep`);
    return { status: 'Successful', owtfRank: highestRank(result.findings), findings: result.findings, exitCode: null, error: null, summary: result.summary };
  } catch (err) {
    if (ctx.signal.aborted) return { ...skipped(String(ctx.signal.reason ?? 'aborted')), status: 'Aborted', aborted: true };
    if (err instanceof SearchTimeout) return { status: 'Aborted', owtfRank: -1, findings: [], exitCode: null, error: `time limit of ${Math.round(ctx.runTimeoutMs / 1000)} s reached` };
    throw err;
  }
}

// The checks, the runner and the parsers are loaded with their first run (https, tls and
// child_process with them): a server that runs nothing starts without them.

async function runCheck(ctx: RunContext, name: string): Promise<RunOutcome> {
  const { CHECKS } = await import('./checks/index.js');
  const check = CHECKS[name as CheckName];
  if (!check) return skipped(`no built-in check is named ${name}`);
  // with a store, every request the check sends becomes a transaction of the target (an aborted
  // check's are dropped with it: a stop queues it again, and its rerun sends them anew)
  const transcript: Sent[] | undefined = ctx.evidence ? [] : undefined;
  try {
    const result = await check({ target: ctx.target, timeoutMs: ctx.checkTimeoutMs, signal: ctx.signal, config: ctx.config, ...(transcript ? { transcript } : {}) });
    if (result.status === 'Skipped') return skipped(result.reason);
    const { recordCheckRequests, withTransactions } = await import('./check-transactions.js');
    const { findings, summary } = ctx.evidence && transcript
      ? await recordCheckRequests({ evidence: ctx.evidence, target: ctx.target.id, transcript, log: ctx.log ?? (() => {}), run: `${ctx.entry.plugin.key} on ${ctx.target.target_url}` }, result)
      : { findings: withTransactions(result.findings, undefined), summary: result.summary };
    return { status: 'Successful', owtfRank: highestRank(findings), findings, exitCode: null, error: null, summary };
  } catch (err) {
    if (ctx.signal.aborted) return { ...skipped(String(ctx.signal.reason ?? 'aborted')), status: 'Aborted', aborted: true };
    const message = `built-in check ${name} failed: ${(err as Error).message}`;
    return { status: 'Crashed', owtfRank: -1, findings: [], exitCode: null, error: message, crash: { message, traceback: (err as Error).stack ?? message } };
  }
}

async function runTool(ctx: RunContext, action: Extract<CatalogueEntry['action'], { kind: 'program' }>): Promise<RunOutcome> {
  const { plugin } = ctx.entry;
  // the configuration's value wins: tool paths are changed there; `program` is the file's own default
  const configured = action.tool === undefined ? undefined : ctx.config(action.tool);
  const program = configured ?? action.program;
  const name = action.tool ?? 'program';
  if (program === undefined) return skipped(`${name} is not a configuration item, and the plugin names no "program"`);
  if (program.trim() === '') return skipped(`${name} is empty: set it to the program's path`);
  const found = await checkProgram(program, ctx.env.PATH ?? '');
  if (!found.ok) {
    const message = `${name}: ${found.message}`;
    if (found.reason === 'missing') return skipped(message);
    return crashed(plugin.key, ctx.target, message);
  }
  // a target stored before hosts had to be one host: a tool would expand it into many
  const several = notOneHost(ctx.target.host_name);
  if (several) return skipped(`refused to run ${name}: ${several}`);
  const pathProblem = await configPathProblem(action.argv, ctx.config);
  if (pathProblem) return skipped(`refused to run ${name}: ${pathProblem}`);
  let { target } = ctx;
  if (target.host_ip === '' && ctx.resolveAddresses && action.argv.some((a) => NEEDS_ADDRESS.test(a))) target = await ctx.resolveAddresses(target);
  const filled = fillArgv(action.argv, { target, outputDir: ctx.outputDir, config: ctx.config });
  if (!filled.ok) return skipped(`refused to run ${name}: ${filled.reason}`);
  const timeoutMs = Math.min(ctx.runTimeoutMs, (action.timeout ?? Infinity) * 1000);
  const { runProgram } = await import('./process-group.js');
  let end: ProgramEnd;
  try {
    const handle = runProgram({
      program: found.path,
      argv: filled.argv,
      cwd: ctx.outputDir,
      env: ctx.env,
      outputDir: ctx.outputDir,
      maxOutputBytes: ctx.maxOutputBytes,
      timeoutMs,
      ...(ctx.env[RUN_MARKER_VARIABLE] ? { marker: `${RUN_MARKER_VARIABLE}=${ctx.env[RUN_MARKER_VARIABLE]}` } : {}),
    });
    ctx.onProgram(handle);
    end = await handle.done;
  } catch (err) {
    // the output files could not be written (a full disk, a removed directory): the run is lost
    return crashed(plugin.key, ctx.target, `${name}: ${(err as Error).message}`);
  }
  // the disk's fault, not the program's: the run's output is lost, so the run is
  if (end.outputError) return crashed(plugin.key, ctx.target, `${name}: could not write its output: ${end.outputError}`);
  const capped = end.capped ? `output capped at ${ctx.maxOutputBytes} bytes per stream` : null;
  switch (end.outcome) {
    case 'failed-to-start': {
      const message = `${name}: ${found.path} could not start: ${end.reason ?? end.errno}`;
      return end.errno === 'ENOENT' ? skipped(message) : crashed(plugin.key, ctx.target, message);
    }
    case 'aborted':
      return { status: 'Aborted', owtfRank: -1, findings: [], exitCode: null, error: end.reason ?? 'aborted', aborted: true };
    case 'timeout': {
      const limit = `time limit of ${timeoutMs < 1000 ? `${timeoutMs} ms` : `${Math.round(timeoutMs / 1000)} s`} reached`;
      return { status: 'Aborted', owtfRank: -1, findings: [], exitCode: null, error: [limit, capped].filter(Boolean).join('; ') };
    }
    case 'signaled':
      return crashed(plugin.key, ctx.target, `${name} died by ${end.signal}`);
    case 'exited': {
      let parsed: Awaited<ReturnType<typeof parse>>;
      try {
        parsed = action.parser ? await parse(action.parser, ctx.outputDir, ctx.signal, ctx.outputsDir) : undefined;
      } catch (err) {
        if (ctx.signal.aborted) return { status: 'Aborted', owtfRank: -1, findings: [], exitCode: end.exitCode, error: `${String(ctx.signal.reason ?? 'aborted')} (while its output was read)`, aborted: true };
        throw err;
      }
      const findings = parsed?.findings ?? [];
      const summary = parsed?.summary ? { summary: parsed.summary } : {};
      const success = action.successExitCodes ?? [0];
      if (end.exitCode === null || !success.includes(end.exitCode)) {
        // the program said it failed: what it found is kept, but a failed run never counts as passing
        const rank = highestRank(findings);
        const message = `${name} exited with status ${end.exitCode} (success: ${success.join(', ')}); ${await stderrTail(ctx.outputDir, ctx.outputsDir)}`;
        const error = [message, capped, parsed?.error].filter(Boolean).join('; ');
        return { status: 'Crashed', owtfRank: rank > 0 ? rank : -1, findings, exitCode: end.exitCode, error, crash: { message: `${plugin.key} on ${ctx.target.target_url}: ${message}`, traceback: message }, ...summary };
      }
      return {
        status: 'Successful',
        // no XML to rank (the tool failed early): unranked, never "passing"
        owtfRank: parsed && (findings.length > 0 || !parsed.error) ? highestRank(findings) : -1,
        findings,
        exitCode: end.exitCode,
        error: [capped, parsed?.error].filter(Boolean).join('; ') || null,
        ...summary,
      };
    }
  }
}

const CONFIG_PLACEHOLDER = /\{config:([A-Za-z0-9_.-]+)\}/g;
/** Debian packages that install the files default values name: said when one is missing. */
const PACKAGE_OF: [prefix: string, name: string][] = [
  ['/usr/share/dirb/', 'dirb'],
  ['/usr/share/skipfish/', 'skipfish'],
  ['/usr/share/wordlists/', 'wordlists'],
  ['/usr/share/seclists/', 'seclists'],
];

/**
 * What is wrong with a path a program would get from the configuration ({config:KEY} whose value
 * is a path): one that does not exist, or one beginning with `~` (no shell expands it here).
 */
async function configPathProblem(argv: readonly string[], config: (key: string) => string | undefined): Promise<string | undefined> {
  const howToSet = (key: string) => `set ${key} to another path with PATCH /api/v1/configuration/ (${key}=<path>)`;
  for (const template of argv) {
    for (const [, key] of template.matchAll(CONFIG_PLACEHOLDER)) {
      const value = config(key!);
      if (value === undefined) continue;
      if (value.startsWith('~')) return `${key} is ${value}: no shell expands "~" for a program run here; ${howToSet(key!)}`;
      if (!value.startsWith('/')) continue;
      try {
        await fsPromises().stat(value);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const pkg = PACKAGE_OF.find(([prefix]) => value.startsWith(prefix))?.[1];
        const install = pkg ? `install it (Debian's ${pkg} package: apt-get install ${pkg})` : 'install it';
        const what = code === 'ENOENT' || code === 'ENOTDIR' ? 'which does not exist' : `which cannot be read (${code})`;
        return `${key} is ${value}, ${what}: ${install}, or ${howToSet(key!)}`;
      }
    }
  }
  return undefined;
}

/** Lines of standard error an exit status that means failure is explained with. */
const STDERR_LINES = 10;
const STDERR_TAIL_BYTES = 4096;

/** The last lines of the run's standard error, without terminal escapes, said as a sentence's end. */
async function stderrTail(outputDir: string, outputsDir: string | undefined): Promise<string> {
  const read = await readRegularFile(join(outputDir, 'stderr.txt'), STDERR_TAIL_BYTES, { tail: true, under: outputsDir });
  if (!read.ok) return `its standard error could not be read (${read.reason})`;
  let text = stripTerminalEscapes(read.bytes.toString('utf8'));
  // a tail cut mid-line (or mid-character) starts at the next whole line
  if (read.size > read.bytes.length) text = text.slice(text.indexOf('\n') + 1);
  const lines = text.split('\n').map((l) => l.trimEnd()).filter((l) => l !== '').slice(-STDERR_LINES);
  return lines.length === 0 ? 'its standard error is empty' : `the last lines of its standard error:\n${lines.join('\n')}`;
}

/** A run that crashed (or could not start): its error listed, naming the plugin and the target. */
export function crashed(key: string, target: Target, message: string): RunOutcome {
  return {
    status: 'Crashed',
    owtfRank: -1,
    findings: [],
    exitCode: null,
    error: message,
    crash: { message: `${key} on ${target.target_url}: ${message}`, traceback: message },
  };
}

/** A parser's findings from the file the program wrote; a missing, unreadable or irregular file is said, not fatal. */
async function parse(parser: string, outputDir: string, signal: AbortSignal, outputsDir: string | undefined): Promise<{ findings: Finding[]; summary?: string; error?: string } | undefined> {
  if (parser !== 'nmap-xml') return undefined;
  // a FIFO, socket or device left in its place is never opened for reading, nor a file reached
  // through a directory swapped for a symlink (see regular-file.ts)
  const read = await readRegularFile(join(outputDir, 'nmap.xml'), MAX_PARSED_FILE, { under: outputsDir });
  if (!read.ok) return { findings: [], error: `no nmap XML to rank (nmap.xml: ${read.reason})` };
  const cut = read.size > MAX_PARSED_FILE ? `nmap.xml is ${read.size} bytes: only its first ${MAX_PARSED_FILE} were read` : undefined;
  const { parseNmapXmlInSlices } = await import('./parsers/nmap.js');
  const result = await parseNmapXmlInSlices(read.bytes.toString('utf8'), { signal });
  return cut ? { ...result, error: cut } : result;
}
