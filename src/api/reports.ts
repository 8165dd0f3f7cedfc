/** /api/v1/reports/<session_id> (extension): a session's report, one self-contained HTML page. */
import type { Catalogue } from '../engine/catalogue.js';
import { requestLine } from '../evidence/read.js';
import type { Evidence, LoadedTarget } from '../evidence/store.js';
import { HttpError } from '../http/jsend.js';
import { effectiveRank, targetOutputs } from '../store/engine.js';
import { listConfig, type DefaultItem } from '../store/configuration.js';
import type { Store } from '../store/store.js';
import { listTargets } from '../store/targets.js';
import { safeFileStem } from './filename.js';
import { MESSAGES } from './messages.js';
import type { ApiRouter } from './openapi.js';
import { severityCounts } from './misc.js';
import { parseUnsigned } from './params.js';
import { renderReport, reportPolicy, type RankedOutput, type ReportInput } from './report-page.js';

export function registerReports(router: ApiRouter, store: Store, defaults: DefaultItem[], catalogue?: Catalogue, evidence?: Evidence): void {
  const defaultValues = new Map(defaults.map((d) => [d.key, d.value]));
  /** The testing guide's order of codes, made on the first report (the catalogue is read when first needed). */
  let order: Map<string, number> | undefined;
  const guideOrder = () => (order ??= new Map((catalogue?.testGroups ?? []).map((g, i) => [g.code, i])));

  /**
   * A target's outputs worth reporting (ranked, or with findings or notes), highest effective rank
   * first, then in the guide's order.
   */
  const rankedOutputs = (targetId: number): RankedOutput[] =>
    targetOutputs(store.state, targetId)
      .filter((o) => effectiveRank(o) >= 0 || o.findings.length > 0 || o.user_notes.trim() !== '')
      .map((o) => ({
        rank: effectiveRank(o),
        code: o.plugin_code,
        type: o.plugin_type,
        title: catalogue?.get(o.plugin_key)?.plugin.title ?? catalogue?.testGroup(o.plugin_code)?.descrip ?? o.plugin_key,
        status: o.status,
        findings: [...o.findings].sort((a, b) => b.rank - a.rank),
        notes: o.user_notes,
        byTester: o.user_rank !== -1,
      }))
      .sort((a, b) => b.rank - a.rank || (guideOrder().get(a.code) ?? 1e9) - (guideOrder().get(b.code) ?? 1e9) || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0) || (a.type < b.type ? -1 : 1));

  /** Dirty items whose value is not the default's (an item set back to its default is not news). */
  const changedConfiguration = (): ReportInput['changed'] =>
    listConfig(store.state, { dirty: true })
      .filter((item) => defaultValues.get(item.key) !== item.value)
      .map((item) => ({ key: item.key, section: item.section, value: item.value, defaultValue: defaultValues.get(item.key) }));

  router.add('GET', '/api/v1/reports/{session_id:int}', async (ctx) => {
    const policy = await reportPolicy();
    const id = parseUnsigned(ctx.params.session_id);
    const row = id === undefined ? undefined : store.state.sessions.get(id);
    if (!row) throw new HttpError(400, MESSAGES.invalidSessionId);
    const targets = listTargets(store.state, { sessionId: row.id });
    // the transactions of the targets whose findings name some (grep plugins', built-in checks'): their request lines
    const loaded = new Map<number, LoadedTarget>();
    if (evidence) {
      for (const t of targets) {
        if (targetOutputs(store.state, t.id).some((o) => o.findings.some((f) => f.transactions?.length))) loaded.set(t.id, await evidence.load(t.id));
      }
    }
    const input: ReportInput = {
      session: { id: row.id, name: row.name, createdAt: row.createdAt },
      targets,
      severity: severityCounts(store, row.id),
      ranked: rankedOutputs,
      requestLine: (target, id) => {
        const index = loaded.get(target);
        return index && requestLine(index, id);
      },
      changed: changedConfiguration(),
      generatedAt: new Date(),
    };
    const html = await renderReport(input, policy);
    return {
      status: 200,
      body: html,
      headers: {
        'Content-Type': 'text/html; charset=utf-8',
        'Cache-Control': 'no-store',
        'Content-Security-Policy': policy,
        'X-Frame-Options': 'DENY',
        // inline: shown, and saved under a name that says what it is
        'Content-Disposition': `inline; filename="${safeFileStem(row.name, `session-${row.id}`)}.report.html"`,
      },
    };
  }, {
    summary: "A session's report (extension): one self-contained HTML page, no script, printable on A4",
    description: "The session and when it was made, its outputs counted by effective rank, each target's findings ordered by effective rank (rank, plugin code and title, findings with their evidence and the request line of each transaction they name, the tester's notes), its targets grouped by host with scheme, port and IP, counts, and the configuration that differs from the defaults.",
    ok: { status: 200, description: 'The report', type: 'text/html', schema: { type: 'string' } },
    fails: { 400: [MESSAGES.invalidSessionId] },
  });
}
