/**
 * The workers: each takes the oldest active work, runs it, records how it ended, and takes the
 * next. Pause, resume and abort act on a worker's program (its whole process group); a stop
 * aborts every run and puts its work back at the head of the worklist.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import type { Evidence } from '../evidence/store.js';
import { fsPromises } from '../lazy-builtins.js';
import type { Store } from '../store/store.js';
import { withAddresses } from '../store/targets.js';
import type { Target, WorkRow } from '../store/state.js';
import { pluginOrStandIn, type Catalogue } from './catalogue.js';
import type { RunHandle as ProgramHandle } from './process-group.js';
import { killUnowned, RUN_MARKER_VARIABLE, runMarker } from './proc.js';
import { boundFindings, boundSummary, boundText } from './findings.js';
import { crashed, runPlugin, skipped, type RunOutcome } from './run.js';
import type { CatalogueEntry, Plugin } from './types.js';

export interface EngineOptions {
  store: Store;
  catalogue: Catalogue;
  dataDir: string;
  workers: number;
  /** Milliseconds a run may take, paused time not counted. */
  runTimeoutMs: number;
  /** Milliseconds each request of a built-in check may take. */
  checkTimeoutMs?: number;
  /** Bytes kept of a program's standard output, and of its error. */
  maxOutputBytes?: number;
  /** The transaction store: grep plugins read it. */
  evidence?: Evidence;
  log: (line: string) => void;
}

/** A worker as the API shows it: exactly the upstream shape. */
export interface WorkerView {
  id: number;
  name: string;
  busy: boolean;
  paused: boolean;
  work: [] | [Target, Plugin];
  start_time: string;
  worker: number | null;
}

interface Run {
  output: number;
  target: Target;
  plugin: Plugin;
  /** Its directory under DATA_DIR/outputs ('' for a plugin that runs no program). */
  outputPath: string;
  startedAt: number;
  program?: ProgramHandle;
  controller: AbortController;
  /** Why it is being ended: a user's abort, or the server's stop (then it is requeued). */
  ending?: 'user' | 'stop';
  done: Promise<void>;
}

interface Worker {
  id: number;
  paused: boolean;
  run?: Run;
  /** Removed while busy: it goes once its run has ended. */
  removed?: boolean;
}

export type WorkerAction = 'pause' | 'resume' | 'abort';

export interface Engine {
  readonly catalogue: Catalogue;
  /** DATA_DIR/outputs: every output_path is relative to it. */
  readonly outputsDir: string;
  workers(): WorkerView[];
  /** When a worker's current run began (ms since the epoch), undefined when idle or unknown. */
  runStartedAt(id: number): number | undefined;
  /** Applies an action to one worker, or every worker with id 0; false for an unknown worker. */
  act(id: number, action: WorkerAction): boolean;
  addWorker(): void;
  /** Removes a worker (a busy one's run is aborted first); false for an unknown one. */
  removeWorker(id: number): boolean;
  /** Works were queued or resumed: idle workers take them. */
  kick(): void;
  /** Removes output directories (after their outputs or targets were deleted). */
  removeOutputDirs(paths: string[]): Promise<void>;
  /** Aborts every run, requeues their works, and waits for them to be recorded. */
  close(): Promise<void>;
}

const DEFAULT_CHECK_TIMEOUT = 10_000;
/** How long a run waits for its target's host name to resolve. */
const RUN_LOOKUP_MS = 5_000;
const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;
/** How long a write that failed (a full disk) waits before it is tried again. */
const RETRY_MS = 1_000;
/** After the start, when to look for what a dead server left running that no output names. */
const LEFTOVERS_AFTER_MS = 1_000;

/** `2026/11/24 17:00:00`, local time, as the upstream worker list shows it. */
export function workerTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}/${p(d.getMonth() + 1)}/${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export { RUN_MARKER_VARIABLE, runMarker } from './proc.js';

/** What an ended run's `error` says of who ended it. */
const endReason = (why: 'user' | 'stop') => (why === 'stop' ? 'the server stopped' : 'aborted by a user');

export function createEngine(options: EngineOptions): Engine {
  const { store, catalogue, log } = options;
  const outputsDir = join(resolve(options.dataDir), 'outputs');
  // worked out with the first run (a hash: node:crypto is not loaded at start for it)
  let marker: string | undefined;
  const workers: Worker[] = [];
  let nextWorkerId = 1;
  let closing = false;
  // no colours, no cursor games: a tool's output is read as text, never by a terminal
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', TERM: 'dumb' };
  // a tool never needs the server's own secret
  delete env.ASSESSD_TOKEN;

  for (let i = 0; i < options.workers; i++) workers.push({ id: nextWorkerId++, paused: false });

  const config = (key: string) => store.state.config.get(key)?.value;

  /** Changes the store, trying again while the disk refuses (a full disk): a run's end is never dropped. */
  async function record<T>(change: () => Promise<T>, what: string): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await change();
      } catch (err) {
        if (attempt === 1 || attempt % 60 === 0) log(`could not record ${what}, trying again: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /**
   * Works whose start is asked of the store and not yet answered: while the disk has no room the
   * store applies a change only once a probe of the disk says so, and until then the work is
   * still on the worklist, where another worker would take it too.
   */
  const starting = new Set<number>();

  function nextWork(): WorkRow | undefined {
    for (const work of store.state.works.values()) if (work.active && !starting.has(work.id)) return work;
    return undefined;
  }

  function pump(): void {
    if (closing) return;
    for (const worker of workers) {
      if (worker.run || worker.paused || worker.removed) continue;
      const work = nextWork();
      if (!work) return;
      start(worker, work);
    }
  }

  function start(worker: Worker, work: WorkRow): void {
    const entry = catalogue.get(work.plugin);
    const plugin = pluginOrStandIn(catalogue, work.plugin);
    const target = { ...store.state.targets.get(work.target)!.target };
    const outputPath = entry?.action.kind === 'program' ? [String(target.id), plugin.group, plugin.type, plugin.code].join('/') : '';
    const at = Date.now();
    // applied at once (the work leaves the worklist now: no other worker takes it), durable later;
    // on a full disk, once a probe of it says so (`starting` keeps it from the other workers)
    starting.add(work.id);
    const started = store.change({ op: 'startRun', work: work.id, plugin: { key: plugin.key, code: plugin.code, group: plugin.group, type: plugin.type }, outputPath, at });
    void started.then(() => starting.delete(work.id), () => starting.delete(work.id));
    const run: Run = { output: 0, target, plugin, outputPath, startedAt: at, controller: new AbortController(), done: Promise.resolve() };
    worker.run = run;
    run.done = (async () => {
      let result: Awaited<typeof started>;
      try {
        result = await started;
      } catch (err) {
        // not durable: rolled back, the work is queued again; this worker tries later
        log(`could not start ${plugin.key} on ${target.target_url}: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, RETRY_MS));
        return;
      }
      if (!result.ok) return;
      run.output = result.output;
      let outcome: RunOutcome;
      try {
        outcome = await execute(run, entry);
      } catch (err) {
        // a check, a parser or the runner failed: this run crashed, never the server
        const error = err as Error;
        log(`${plugin.key} on ${target.target_url} crashed: ${error.stack ?? error.message}`);
        outcome = crashed(plugin.key, target, `internal error: ${error.message}`);
      }
      await finish(run, outcome);
    })()
      .catch((err: Error) => log(`the run of ${plugin.key} on ${target.target_url} failed: ${err.stack ?? err.message}`))
      .finally(() => {
      worker.run = undefined;
      if (worker.removed) workers.splice(workers.indexOf(worker), 1);
      pump();
    });
  }

  async function execute(run: Run, entry: CatalogueEntry | undefined): Promise<RunOutcome> {
    const { outputPath } = run;
    if (!entry) return skipped(`plugin ${run.plugin.key} is no longer in the catalogue`);
    if (run.ending) return { status: 'Aborted', owtfRank: -1, findings: [], exitCode: null, error: endReason(run.ending), aborted: true };
    const outputDir = join(outputsDir, outputPath);
    if (outputPath) {
      targetDirs.add(run.target.id);
      try {
        // a rerun starts from an empty directory: nothing of the last run's is taken for this one's
        await removeTree(outputDir);
        await fsPromises().mkdir(outputDir, { recursive: true, mode: 0o700 }).catch((err: NodeJS.ErrnoException) => madeAgain(outputDir, err));
      } catch (err) {
        // the system's reason without its path (`ENOSPC: no space left on device, mkdir '/...'`): no body names a file of ours
        return crashed(run.plugin.key, run.target, `could not make the output directory: ${(err as Error).message.replace(/, \w+ '[^]*$/, '')}`);
      }
    }
    return runPlugin({
      entry,
      target: run.target,
      outputDir,
      outputsDir,
      config,
      runTimeoutMs: options.runTimeoutMs,
      checkTimeoutMs: options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT,
      signal: run.controller.signal,
      env: { ...env, [RUN_MARKER_VARIABLE]: `${(marker ??= runMarker(options.dataDir))}:${run.output}` },
      resolveAddresses: (target) => resolveAddresses(target, run.controller.signal),
      evidence: options.evidence,
      log,
      onProgram(handle) {
        run.program = handle;
        if (run.ending) handle.abort(endReason(run.ending));
        else if (workers.find((w) => w.run === run)?.paused) handle.pause();
        // recorded so that a start after a crash can end this process group
        if (handle.pid > 0) void record(() => store.change({ op: 'runStarted', output: run.output, pid: handle.pid, pidStart: handle.startTime }), 'a run\'s process');
      },
    });
  }

  async function finish(run: Run, outcome: RunOutcome): Promise<void> {
    const at = Date.now();
    if (run.ending === 'stop' && outcome.aborted) {
      await record(() => store.change({ op: 'requeueRun', output: run.output, at, reason: 'aborted by the server\'s stop; queued again' }), 'a requeued run');
      return;
    }
    // bounded before the journal sees it: a run's end is never bigger than what the store keeps
    const { status, owtfRank, exitCode } = outcome;
    const findings = boundFindings(outcome.findings);
    const error = outcome.error === null ? null : boundText(outcome.error);
    const summary = outcome.summary === undefined ? undefined : boundSummary(outcome.summary);
    const crash = outcome.crash && { message: boundText(outcome.crash.message), traceback: boundText(outcome.crash.traceback) };
    const result = await record(
      () => store.change({ op: 'endRun', output: run.output, at, status, owtfRank, findings, exitCode, error, ...(summary === undefined ? {} : { summary }), ...(crash ? { crash } : {}) }),
      'the end of a run',
    );
    // its output (or target) was deleted while it ran: its files go too
    if (!result.ok && run.outputPath) await removeOutputDirs([run.outputPath]);
  }

  function end(run: Run, why: 'user' | 'stop'): void {
    run.ending ??= why;
    const reason = endReason(why);
    run.program?.abort(reason);
    run.controller.abort(reason);
  }

  /** The host's addresses looked up for a run that needs them, kept with the target (an op: replays look nothing up). */
  async function resolveAddresses(target: Target, signal: AbortSignal): Promise<Target> {
    const { lookupHosts } = await import('./addresses.js');
    const found = (await lookupHosts([target.host_name], RUN_LOOKUP_MS)).get(target.host_name);
    if (!found || signal.aborted) return target;
    await record(() => store.change({ op: 'setTargetAddresses', target: target.id, addresses: found }), "a target's addresses");
    return withAddresses(target, found);
  }

  function view(worker: Worker): WorkerView {
    const run = worker.run;
    return {
      id: worker.id,
      name: `Worker-${worker.id}`,
      busy: run !== undefined,
      paused: worker.paused,
      work: run ? [run.target, run.plugin] : [],
      start_time: run ? workerTime(run.startedAt) : 'NA',
      worker: run?.program && run.program.pid > 0 ? run.program.pid : null,
    };
  }

  async function removeOutputDirs(paths: string[]): Promise<void> {
    for (const path of paths) {
      const dir = resolve(outputsDir, path);
      // never outside the outputs directory, whatever a data file says
      if (!dir.startsWith(outputsDir + sep) || relative(outputsDir, dir).startsWith('..')) continue;
      await removeTree(dir).catch((err: Error) => log(`could not remove ${dir}: ${err.message}`));
    }
  }

  /** Targets with a directory under DATA_DIR/outputs: a deleted target's goes with it. */
  const targetDirs = new Set<number>();
  try {
    for (const name of readdirSync(outputsDir)) if (/^[0-9]+$/.test(name)) targetDirs.add(Number(name));
  } catch {
    // no outputs yet
  }

  // Deleted targets (or outputs) while a run went on: that run is ended, and a deleted target's
  // files removed. Cheap: one look per busy worker and per target that has files.
  const sweep = setInterval(() => {
    for (const worker of workers) {
      const run = worker.run;
      if (run && run.output && !run.ending && !store.state.outputs.has(run.output)) end(run, 'user');
    }
    for (const id of targetDirs) {
      if (store.state.targets.has(id) || workers.some((w) => w.run?.target.id === id)) continue;
      targetDirs.delete(id);
      void removeOutputDirs([String(id)]);
    }
  }, 1_000);
  sweep.unref();

  // What a server that stopped left running that no output names any more (its output, target or
  // session deleted while it ran, then a crash before the sweep ended it): ended once, soon after
  // the start and off its path (every process's environment is read: ~1 ms a hundred processes).
  // A closing engine kills nothing more, and close() waits for a scan under way: once closed, the
  // directory may be the next server's, with runs of its own.
  let scan: Promise<void> = Promise.resolve();
  const leftovers = setTimeout(() => {
    scan = killUnowned((marker ??= runMarker(options.dataDir)), (output) => closing || workers.some((w) => w.run?.output === output))
      .then((n) => {
        if (n > 0) log(`ended ${n === 1 ? '1 process' : `${n} processes`} left running by a server that stopped, of runs none of whose outputs is running now`);
      })
      .catch((err: Error) => log(`could not look for processes left running by a server that stopped: ${err.message}`));
  }, LEFTOVERS_AFTER_MS);
  leftovers.unref();

  return {
    catalogue,
    outputsDir,
    workers: () => workers.filter((w) => !w.removed).map(view),
    runStartedAt: (id) => workers.find((w) => w.id === id && !w.removed)?.run?.startedAt,
    act(id, action) {
      const chosen = id === 0 ? workers.filter((w) => !w.removed) : workers.filter((w) => w.id === id && !w.removed);
      if (chosen.length === 0 && id !== 0) return false;
      for (const worker of chosen) {
        if (action === 'pause') {
          worker.paused = true;
          worker.run?.program?.pause();
        } else if (action === 'resume') {
          worker.paused = false;
          worker.run?.program?.resume();
        } else if (worker.run) {
          end(worker.run, 'user');
        }
      }
      if (action === 'resume') pump();
      return true;
    },
    addWorker() {
      workers.push({ id: nextWorkerId++, paused: false });
      pump();
    },
    removeWorker(id) {
      const worker = workers.find((w) => w.id === id && !w.removed);
      if (!worker) return false;
      if (worker.run) {
        worker.removed = true;
        end(worker.run, 'user');
      } else {
        workers.splice(workers.indexOf(worker), 1);
      }
      return true;
    },
    kick: pump,
    removeOutputDirs,
    async close() {
      closing = true;
      clearInterval(sweep);
      clearTimeout(leftovers);
      await scan;
      const runs = workers.map((w) => w.run).filter((r): r is Run => r !== undefined);
      for (const run of runs) end(run, 'stop');
      await Promise.all(runs.map((r) => r.done));
    },
  };
}

/**
 * Removes a directory and all it holds, by `rm -rf` in its own process, with an argv (no shell).
 * Node's recursive fs.rm starts an operation for every entry at once: a tool's 300,000 files
 * filled libuv's threads for 13 s, every other file read of the server (outputs, transactions, the
 * store) waiting behind them. And a tool may leave a tree deeper than the longest path the kernel
 * takes (PATH_MAX, 4,096 bytes): fs.rm then failed with ENAMETOOLONG (the output stayed, a rerun
 * Crashed, a delete answered 200 with the files still there), where GNU rm walks the tree relative
 * to each directory (openat). Node's is kept for a box without an rm.
 */
async function removeTree(dir: string): Promise<void> {
  try {
    await fsPromises().lstat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const { execFile } = await import('node:child_process');
  const removed = await new Promise<boolean>((resolve, reject) =>
    // (-rf only: GNU's, BSD's and busybox's rm take it; rm never follows a symlink it meets)
    execFile('rm', ['-rf', '--', dir], { timeout: 600_000 }, (error, _out, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') resolve(false);
      else if (error) reject(new Error(`rm -rf: ${String(stderr).trim() || error.message}`));
      else resolve(true);
    }),
  );
  if (!removed) await fsPromises().rm(dir, { recursive: true, force: true });
}

/**
 * `dir` made again, synchronously, after node's promise mkdir failed with ENOENT: recursive, it
 * says ENOENT where the disk is full, and the synchronous form says ENOSPC (thrown, for the run
 * to say); a directory made meanwhile is taken. Any other failure is thrown as it is.
 */
function madeAgain(dir: string, err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}
