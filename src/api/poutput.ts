/** /api/v1/targets/<id>/poutput: a target's plugin outputs, ranked and annotated by the tester. */
import { resolve, sep } from 'node:path';
import { badFileName, listOutputFiles, MAX_DIRECTORIES, MAX_LISTED, openOutputFile } from '../engine/output-files.js';
import type { Engine } from '../engine/scheduler.js';
import { outputText, outputView } from '../engine/output-text.js';
import { HttpError, HTTP_MESSAGES, success, successWritten } from '../http/jsend.js';
import { MAX_NOTES, outputMatches, targetOutputs, type OutputFilter } from '../store/engine.js';
import type { OutputRow } from '../store/state.js';
import type { Store } from '../store/store.js';
import type { Handler, RequestContext } from './context.js';
import { ENGINE_MESSAGES as E, MESSAGES as M } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter } from './openapi.js';
import { boolArg, listArg, parseUnsigned } from './params.js';
import { restSegments } from './plugins.js';
import { readableFileName, safeFileStem } from './filename.js';
import { arrayPieces } from '../json-pieces.js';

const RANK = /^\s*-?[0-9]+\s*$/;

/** A rank argument: an integer in -1..5, or a 400 naming it. */
function rankValue(raw: string, name: string): number {
  const n = RANK.test(raw) ? Number(raw) : NaN;
  if (!(Number.isInteger(n) && n >= -1 && n <= 5)) throw new HttpError(400, M.invalidParameterType, { [name]: 'expected an integer from -1 to 5' });
  return n;
}

export function registerPoutput(router: ApiRouter, store: Store, engine: Engine): void {
  const targetOf = (ctx: RequestContext): number => {
    const id = parseUnsigned(ctx.params.target_id);
    if (id === undefined || !store.state.targets.has(id)) throw new HttpError(400, M.invalidTargetReference);
    return id;
  };

  /** What the path (group/type/code) and the filters name. */
  function outputFilter(ctx: RequestContext): OutputFilter {
    const [group, type, code] = restSegments(ctx.rest);
    const filter = (name: string) => listArg(ctx.args, name);
    const userRanks = filter('user_rank')?.map((r) => rankValue(r, 'user_rank'));
    const owtfRanks = filter('owtf_rank')?.map((r) => rankValue(r, 'owtf_rank'));
    const chosen: OutputFilter = {
      group,
      type,
      code,
      keys: filter('plugin_key'),
      types: filter('plugin_type'),
      groups: filter('plugin_group'),
      codes: filter('plugin_code'),
      statuses: filter('status'),
      userRanks,
      owtfRanks,
    };
    // what a journal record holds: no absent field written as null
    for (const key of Object.keys(chosen) as (keyof OutputFilter)[]) if (chosen[key] === undefined) delete chosen[key];
    return chosen;
  }

  /** The outputs the path and the filters name. */
  function selected(ctx: RequestContext, target: number): OutputRow[] {
    const filter = outputFilter(ctx);
    return targetOutputs(store.state, target).filter((o) => outputMatches(o, filter));
  }

  const list: Handler = (ctx) => {
    const target = targetOf(ctx);
    const rows = selected(ctx, target);
    // a row at a time, each output's text read as the client takes the rows before
    const views = async function* () {
      for (const row of rows) yield JSON.stringify({ ...outputView(row), output: await outputText(store.state, engine.catalogue, engine.outputsDir, row) });
    };
    return successWritten(arrayPieces(views()));
  };

  /**
   * An output's files: `.../files/` lists them, `.../files/<name>` answers one, read-only, as text
   * or a download, never as a page (text/plain or attachment, nosniff, CSP sandbox).
   */
  const files: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const { group, type, code } = ctx.params;
    const names = restSegments(ctx.rest);
    const row = targetOutputs(store.state, target).find((o) => o.plugin_group === group && o.plugin_type === type && o.plugin_code === code);
    if (!row) throw new HttpError(400, E.invalidOutput);
    const bad = names.length > 0 ? badFileName(names) : undefined;
    if (bad) throw new HttpError(400, HTTP_MESSAGES.badRequest, { file: bad });
    // the output's directory, never outside DATA_DIR/outputs whatever a data file says
    const dir = row.output_path ? resolve(engine.outputsDir, row.output_path) : undefined;
    const inside = dir !== undefined && dir.startsWith(engine.outputsDir + sep);
    if (names.length === 0) {
      const { files: listed, more } = inside ? await listOutputFiles(dir) : { files: [], more: false };
      const reply = success(listed);
      if (more) reply.headers = { 'X-Truncated': `the listing stops at ${MAX_LISTED} files, ${MAX_DIRECTORIES} directories or ${10 * MAX_LISTED} entries looked at` };
      return reply;
    }
    if (!inside) throw new HttpError(404, HTTP_MESSAGES.notFound, { file: 'this output has no files' });
    const opened = await openOutputFile(engine.outputsDir, dir, names);
    if (!opened.ok) throw new HttpError(404, HTTP_MESSAGES.notFound, { file: `${names.join('/')}: ${opened.reason}` });
    const { handle, stats } = opened;
    let binary: boolean;
    try {
      // text (no NUL in its first 8 KiB) is shown as plain text; anything else is a download
      const head = Buffer.alloc(Math.min(stats.size, 8192));
      const { bytesRead } = await handle.read(head, 0, head.length, 0);
      binary = head.subarray(0, bytesRead).includes(0);
    } catch (err) {
      await handle.close().catch(() => {});
      throw err;
    }
    const download = binary || boolArg(ctx.args, 'download') === true;
    const name = names[names.length - 1]!;
    return {
      status: 200,
      body: '',
      stream: handle.createReadStream({ start: 0, end: Math.max(0, stats.size - 1), autoClose: true }),
      headers: {
        'Content-Type': binary ? 'application/octet-stream' : 'text/plain; charset=utf-8',
        'Content-Length': String(stats.size),
        'Content-Disposition': `${download ? 'attachment' : 'inline'}; filename="${safeFileStem(name, 'output')}"; filename*=UTF-8''${encodeURIComponent(readableFileName(name, 'output'))}`,
        // whatever the file holds (a tool's HTML report), no page of this origin: no script, no sniffing, no cache
        'Content-Security-Policy': "sandbox; default-src 'none'",
        'X-Content-Type-Options': 'nosniff',
        'Cross-Origin-Resource-Policy': 'same-origin',
        'Cache-Control': 'no-store',
        'Last-Modified': stats.mtime.toUTCString(),
      },
    };
  };

  const names: Handler = (ctx) => {
    const target = targetOf(ctx);
    // grouped in one pass: a filter per code was quadratic (40,000 outputs of one target, as a bundle may bring: 12-34 s)
    const grouped = new Map<string, OutputRow[]>();
    for (const row of targetOutputs(store.state, target)) {
      const list = grouped.get(row.plugin_code);
      if (list) list.push(row);
      else grouped.set(row.plugin_code, [row]);
    }
    // `{"<code>":{"data":[rows],"details":{...}},...}`, a row at a time (each with its findings)
    const pieces = async function* () {
      yield '{';
      for (const [i, [code, rows]] of [...grouped].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).entries()) {
        yield `${i === 0 ? '' : ','}${JSON.stringify(code)}:{"data":`;
        yield* arrayPieces((function* () {
          for (const row of rows) yield JSON.stringify(outputView(row));
        })());
        const group = engine.catalogue.testGroup(code);
        const details = group ? { code: group.code, priority: group.priority, descrip: group.descrip, hint: group.hint, url: group.url, mappings: group.mappings } : { code, priority: 0, descrip: code, hint: '', url: '', mappings: {} };
        yield `,"details":${JSON.stringify(details)}}`;
      }
      yield '}';
    };
    return successWritten(pieces());
  };

  const patch: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const [group, type, code] = restSegments(ctx.rest);
    const rawRank = ctx.args.get('user_rank');
    const notes = ctx.args.get('user_notes');
    if (rawRank === null && notes === null) throw new HttpError(400, M.incorrectQueryParameters, { user_rank: 'user_rank or user_notes is required' });
    const userRank = rawRank === null ? undefined : rankValue(rawRank, 'user_rank');
    if (notes !== null && Buffer.byteLength(notes) > MAX_NOTES) throw new HttpError(400, M.invalidParameterType, { user_notes: `at most ${MAX_NOTES} bytes` });
    if (code === undefined) throw new HttpError(400, E.invalidOutput);
    const key = `${type}@${code}`;
    const row = targetOutputs(store.state, target).find((o) => o.plugin_key === key && o.plugin_group === group);
    if (!row) throw new HttpError(400, E.invalidOutput);
    const result = await store.change({ op: 'rankOutput', target, key, ...(userRank === undefined ? {} : { userRank }), ...(notes === null ? {} : { notes }) });
    if (!result.ok) throw new HttpError(400, E.invalidOutput);
    return success();
  };

  const remove: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const [group, type, code] = restSegments(ctx.rest);
    // the filters, as GET's (upstream's delete reads them so): only the outputs they select go
    const filtered = FILTER_NAMES.some((name) => ctx.args.has(name));
    // chosen when the op applies, on the state it applies to (as a replay chooses)
    const result = await store.change(
      filtered
        ? { op: 'deleteOutputsWhere', target, ...outputFilter(ctx) }
        : { op: 'deleteOutputs', target, ...(group ? { group } : {}), ...(type ? { type } : {}), ...(code ? { code } : {}) },
    );
    if (!result.ok) throw new HttpError(400, M.invalidTargetReference);
    await engine.removeOutputDirs(result.paths);
    return success();
  };

  const filters = {
    plugin_key: { type: 'string', repeatable: true, description: 'Only outputs of this plugin key, e.g. active@OWTF-IG-005 (repeatable)' },
    plugin_type: { type: 'string', repeatable: true, description: 'Only this plugin type (repeatable)' },
    plugin_group: { type: 'string', repeatable: true, description: 'Only this plugin group (repeatable)' },
    plugin_code: { type: 'string', repeatable: true, description: 'Only this code (repeatable)' },
    status: { type: 'string', repeatable: true, description: 'Only outputs of this status: Running, Successful, Aborted, Crashed, Skipped (repeatable)' },
    user_rank: { type: 'integer', repeatable: true, description: 'Only outputs the tester ranked so (-1..5, repeatable)' },
    owtf_rank: { type: 'integer', repeatable: true, description: 'Only outputs the engine ranked so (-1..5, repeatable)' },
  } as const;
  const FILTER_NAMES = Object.keys(filters);
  router.add('GET', '/api/v1/targets/{target_id:int}/poutput/names', names, {
    summary: "A target's outputs (without their text) by code, with each test group's details",
    ok: { status: 200, description: '{<code>: {"data": [outputs], "details": <test group>}}, codes sorted', data: { type: 'object', additionalProperties: { type: 'object', properties: { data: arrayOf(ref('Output')), details: ref('TestGroup') } } } },
    fails: { 400: [M.invalidTargetReference] },
  });
  // at most <group>/<type>/<code>, none empty (`/poutput//` names no output, and deletes none)
  router.add('GET', '/api/v1/targets/{target_id:int}/poutput/*3', list, {
    summary: "A target's outputs with their text: /poutput/[<group>/[<type>/[<code>]]]",
    args: filters,
    ok: { status: 200, description: 'The outputs (an empty array when none), each with `output`: its text, at most 1 MiB', data: arrayOf(ref('Output')) },
    fails: { 400: [M.invalidTargetReference, M.invalidParameterType], 404: [HTTP_MESSAGES.notFound] },
  });
  router.add('GET', '/api/v1/targets/{target_id:int}/poutput/{group:any}/{type:any}/{code:any}/files/*', files, {
    summary: "An output's files: /poutput/<group>/<type>/<code>/files/[<name>]",
    description:
      'Extension: .../files/ lists the regular files of the run\'s output directory ([{"name","size","modified"}], names with / for subdirectories; symlinks and other special files are not listed); .../files/<name> answers one as text/plain (or a download, application/octet-stream, when it holds a NUL byte or with download=true), never as a page: Content-Security-Policy: sandbox, X-Content-Type-Options: nosniff. A name with "..", an empty segment or an encoded separator: 400; a missing file, a symlink, a FIFO or a path leading out of the directory: 404.',
    args: { download: { type: 'boolean', description: 'Answer the file as a download (Content-Disposition: attachment)' } },
    ok: { status: 200, description: 'The output\'s files, or one file\'s bytes', data: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, size: { type: 'integer' }, modified: { type: 'string' } } } }, alternatives: { 'text/plain': { type: 'string' }, 'application/octet-stream': { type: 'string', format: 'binary' } } },
    fails: { 400: [M.invalidTargetReference, E.invalidOutput, HTTP_MESSAGES.badRequest], 404: [HTTP_MESSAGES.notFound] },
  });
  router.add('PATCH', '/api/v1/targets/{target_id:int}/poutput/*3', patch, {
    summary: "The tester's rank and notes on one output: /poutput/<group>/<type>/<code>",
    args: {
      user_rank: { type: 'integer', description: '-1 (unranked) .. 5 (critical)' },
      user_notes: { type: 'string', description: `Notes, at most ${MAX_NOTES} bytes of UTF-8` },
    },
    ok: { status: 200, description: 'Saved', data: EMPTY },
    fails: { 400: [M.invalidTargetReference, M.incorrectQueryParameters, M.invalidParameterType, E.invalidOutput], 404: [HTTP_MESSAGES.notFound] },
  });
  router.add('DELETE', '/api/v1/targets/{target_id:int}/poutput/*3', remove, {
    summary: "Delete a target's outputs and their files: all, or of a group, type or code, or those GET's filters select",
    args: filters,
    ok: { status: 200, description: 'Deleted', data: EMPTY },
    fails: { 400: [M.invalidTargetReference, M.invalidParameterType], 404: [HTTP_MESSAGES.notFound] },
  });
}
