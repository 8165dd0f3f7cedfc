/**
 * A target's results (`/targets/<id>`): its test groups in the guide's order, each output with
 * its status, effective rank (a word, a colour, a mark), findings and their evidence, its text
 * (asked when opened: it may be large), its files (listed when opened), and the tester's rank and
 * notes. Two requests bring it on screen: the target, and its outputs without their text.
 */
import { api, isAbort, isGone, outputFileUrl, type Finding, type Output, type OutputsByCode, type Target } from './api.js';
import { append, appendInFrames, blockText, count, h, num, plural, replace, setTitle } from './dom.js';
import { byGuideOrder, effectiveRank, rankBadge, rankWord, RANKS } from './ranks.js';
import { askBeforeLeaving, type ViewContext } from './router.js';
import { targetNav } from './target-nav.js';
import { announce, busy, describeError, emptyState, errorState, loadingState, targetGoneState, viewHeading } from './ui.js';

const TYPE_ORDER = ['external', 'passive', 'semi_passive', 'active', 'grep', 'bruteforce'];
const byType = (a: Output, b: Output) => TYPE_ORDER.indexOf(a.plugin_type) - TYPE_ORDER.indexOf(b.plugin_type) || (a.plugin_key < b.plugin_key ? -1 : 1);

/** `12.3 KB` */
const size = (bytes: number) => (bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);

function statusBadge(o: Output): HTMLElement {
  return h('span', { class: `state-badge status-${o.status.toLowerCase()}` }, o.status);
}

/** An output's text is shown whole: the server sends at most 1 MiB of it (src/engine/output-text.ts). */
const MAX_OUTPUT_TEXT = 1024 * 1024;

/** Evidence links shown at once; the rest are a click away. */
const EVIDENCE_SHOWN = 12;

/** The transactions a finding names (a grep plugin's matches, a built-in check's requests), each a link to it. */
function evidenceLinks(o: Output, f: Finding): HTMLElement | null {
  const ids = f.transactions ?? [];
  if (ids.length === 0) return null;
  const total = f.transactions_total ?? ids.length;
  const link = (id: number) => h('a', { href: `/targets/${o.target_id}/transactions/${id}`, 'aria-label': `Transaction ${id}` }, `#${id}`);
  const list = h('ul', { class: 'evidence-links' }, ...ids.slice(0, EVIDENCE_SHOWN).map((id) => h('li', {}, link(id))));
  const rest = ids.slice(EVIDENCE_SHOWN);
  const more = rest.length > 0 ? h('button', { type: 'button', class: 'link-button' }, `${rest.length} more`) : null;
  more?.addEventListener('click', () => {
    list.append(...rest.map((id) => h('li', {}, link(id))));
    more.remove();
  });
  return h(
    'div',
    { class: 'evidence-row' },
    h('span', { class: 'hint' }, `Seen in ${count(total, 'transaction')}${total > ids.length ? ` (the first ${ids.length} listed)` : ''}:`),
    list,
    more,
  );
}

/**
 * Findings of an output shown at once, the most severe first; the rest a click away. An output may
 * hold 1,000 of 64 KiB each (a bundle's bound): all of them drawn at once held the view 8-12 s.
 */
const FINDINGS_SHOWN = 100;

function findingsList(o: Output): HTMLElement | HTMLElement[] | null {
  if (o.findings.length === 0) return o.status === 'Successful' && o.owtf_rank === 0 ? h('p', { class: 'hint' }, 'No finding: nothing wrong was seen.') : null;
  const sorted = [...o.findings].sort((a, b) => b.rank - a.rank);
  const item = (f: Finding) => h('li', { class: 'finding' }, h('div', { class: 'finding-head' }, rankBadge(f.rank), h('strong', {}, f.title)), f.detail ? h('pre', { class: 'evidence' }, blockText(f.detail)) : null, evidenceLinks(o, f));
  const list = h('ul', { class: 'findings', 'aria-label': `Findings of ${o.plugin_key}` }, ...sorted.slice(0, FINDINGS_SHOWN).map(item));
  const rest = sorted.slice(FINDINGS_SHOWN);
  const more = rest.length > 0 ? h('button', { type: 'button', class: 'link-button more-findings' }, `Show the ${count(rest.length, 'other finding')}`) : null;
  more?.addEventListener('click', () => {
    list.append(...rest.map(item));
    more.remove();
  });
  const shown = more ? [list, more] : [list];
  // a check whose target did not answer saw nothing: it is not Passing, and says so
  if (o.status === 'Successful' && o.owtf_rank === -1 && sorted.every((f) => f.rank === -1)) {
    return [h('p', { class: 'hint unanswered' }, 'Unranked, not Passing: nothing was seen, so nothing passed (the finding says why). The severity panel and the report do not count it; run it again once the target answers, or rank it yourself.'), ...shown];
  }
  return more ? shown : list;
}

export function resultsView({ root, params, signal }: ViewContext): void {
  const id = Number(params.id);
  const heading = viewHeading('Results')[0];
  const intro = targetNav(id, 'results');
  const status = h('div', { class: 'list-region' }, loadingState('Loading the results…'));
  append(root, [heading, intro, status]);
  /** Outputs whose rank or notes are edited and not saved: leaving the view asks first, as the configuration's does. */
  const unsaved = new Set<number>();
  const guardUnsaved = () => askBeforeLeaving(unsaved.size === 0 ? undefined : `Your rank or notes on ${plural(unsaved.size, 'output')} are not saved.`);

  async function load(): Promise<void> {
    try {
      const [target, outputs] = await Promise.all([api.target(id, signal), api.outputs(id, signal)]);
      replace(status);
      show(target, outputs);
    } catch (err) {
      if (isAbort(err)) return;
      if (isGone(err, 'target')) {
        replace(heading, 'Target not found');
        replace(status, targetGoneState(id));
      } else replace(status, errorState(err, () => void load()));
    }
  }

  /** Counts the summary's ranks again (a rank saved changes them). */
  let countRanks = () => {};

  function show(target: Target, byCode: OutputsByCode): void {
    replace(heading, 'Results of ', h('span', { class: 'target-name' }, target.target_url));
    setTitle('Results of ', target.target_url);
    const codes = Object.keys(byCode).sort(byGuideOrder);
    const all = codes.flatMap((c) => byCode[c].data);
    const counts = new Map(RANKS.map((r) => [r, h('span', { class: 'rank-count' })]));
    countRanks = () => {
      const perRank = new Map<number, number>();
      for (const o of all) perRank.set(effectiveRank(o), (perRank.get(effectiveRank(o)) ?? 0) + 1);
      for (const [r, el] of counts) el.textContent = num(perRank.get(r) ?? 0);
    };
    countRanks();
    const summary = h(
      'section',
      { class: 'panel result-summary', 'aria-labelledby': 'result-summary-heading' },
      h('h2', { id: 'result-summary-heading' }, `${count(all.length, 'output')} in ${count(codes.length, 'test group')}`),
      h(
        'ul',
        { class: 'rank-counts' },
        ...RANKS.map((r) => h('li', {}, rankBadge(r), counts.get(r)!)),
      ),
      h('p', { class: 'hint' }, 'The rank shown is yours when you set one, else the engine’s. ', h('a', { href: '/plugins' }, 'Run more plugins'), '.'),
    );
    append(root, [summary]);
    if (codes.length === 0) {
      root.append(emptyState('No results yet for this target.', 'Queue plugins on it in the Plugins view; each run’s output is listed here.'));
      return;
    }
    const groups = h('div', { class: 'test-groups' });
    root.append(groups);
    appendInFrames(groups, codes.length, (i) => testGroup(codes[i], byCode[codes[i]]), 12, 12);
  }

  function testGroup(code: string, { data, details }: OutputsByCode[string]): HTMLElement {
    const headingId = `group-${code}`;
    const highest = () => rankBadge(Math.max(...data.map(effectiveRank)), 'Highest: ');
    let top = highest();
    // a rank saved: the group's highest and the summary's counts say it at once
    const ranked = () => {
      const fresh = highest();
      top.replaceWith(fresh);
      top = fresh;
      countRanks();
    };
    return h(
      'section',
      { class: 'test-group', 'aria-labelledby': headingId, 'data-code': code },
      h(
        'div',
        { class: 'test-group-head' },
        h('h2', { id: headingId }, h('span', { class: 'code' }, code), ` ${details.descrip}`),
        top,
      ),
      details.hint || webUrl(details.url)
        ? h('p', { class: 'hint' }, details.hint, details.hint && webUrl(details.url) ? ' · ' : '', webUrl(details.url) ? h('a', { href: details.url, target: '_blank', rel: 'noopener noreferrer' }, 'Guide page', h('span', { class: 'visually-hidden' }, ` for ${code} (opens in a new tab)`)) : null)
        : null,
      ...[...data].sort(byType).map((o) => outputCard(o, ranked)),
    );
  }

  function outputCard(o: Output, ranked: () => void): HTMLElement {
    const rank = effectiveRank(o);
    const name = `${o.plugin_code} ${o.plugin_type}`;
    const base = `out-${o.id}`;
    const text = h('pre', { class: 'output-text', tabindex: '0', 'aria-label': `Output text of ${name}` });
    const details = h('details', { class: 'output-details' }, h('summary', {}, 'Output text'), text);
    details.addEventListener('toggle', () => {
      if (!details.open || text.dataset.loaded) return;
      text.dataset.loaded = 'loading';
      replace(text, 'Loading…');
      api.outputText(o, signal).then(
        (value) => {
          text.dataset.loaded = 'yes';
          replace(text, blockText(value || '(no text)', MAX_OUTPUT_TEXT));
        },
        (err) => {
          if (isAbort(err)) return;
          delete text.dataset.loaded;
          replace(text, `Could not load the text: ${describeError(err)}`);
        },
      );
    });
    // the run's files, listed when opened: each opens as plain text (a tool's HTML report shows its
    // source, never runs) or downloads; the server answers them in a sandbox, never as a page
    const fileList = h('ul', { class: 'files', 'aria-label': `Files of ${name}` });
    const files = o.output_path ? h('details', { class: 'output-details' }, h('summary', {}, 'Files'), fileList) : null;
    files?.addEventListener('toggle', () => {
      if (!files.open || fileList.dataset.loaded) return;
      fileList.dataset.loaded = 'loading';
      replace(fileList, h('li', {}, 'Loading…'));
      api.outputFiles(o, signal).then(
        (list) => {
          fileList.dataset.loaded = 'yes';
          if (list.length === 0) return replace(fileList, h('li', {}, 'No file.'));
          replace(
            fileList,
            ...list.map((f) =>
              h(
                'li',
                {},
                h('a', { href: outputFileUrl(o, f.name), target: '_blank', rel: 'noopener noreferrer' }, f.name),
                ` (${size(f.size)}) · `,
                h('a', { href: `${outputFileUrl(o, f.name)}?download=true`, download: f.name.split('/').pop() }, 'download', h('span', { class: 'visually-hidden' }, ` ${f.name}`)),
              ),
            ),
          );
        },
        (err) => {
          if (isAbort(err)) return;
          delete fileList.dataset.loaded;
          replace(fileList, h('li', {}, `Could not list the files: ${describeError(err)}`));
        },
      );
    });

    const select = h(
      'select',
      { id: `${base}-rank` },
      h('option', { value: '-1', selected: o.user_rank === -1 }, `Not set (engine: ${rankWord(o.owtf_rank)})`),
      ...[0, 1, 2, 3, 4, 5].map((r) => h('option', { value: r, selected: o.user_rank === r }, `${r} · ${rankWord(r)}`)),
    );
    const notes = h('textarea', { id: `${base}-notes`, rows: 2, maxlength: 10000 });
    notes.value = o.user_notes;
    const save = h('button', { type: 'submit', class: 'small primary' }, 'Save');
    const saved = h('p', { class: 'save-status', role: 'status', id: `${base}-saved` });
    let badge = rankBadge(rank);
    const form = h(
      'form',
      { class: 'rank-form', 'aria-label': `Tester’s verdict on ${name}` },
      h('div', { class: 'field' }, h('label', { for: select.id }, 'Your rank'), select),
      h('div', { class: 'field grow' }, h('label', { for: notes.id }, 'Notes'), notes),
      h('div', { class: 'field save' }, save),
      saved,
    );
    const markDirty = () => {
      const dirty = select.value !== String(o.user_rank) || notes.value !== o.user_notes;
      form.classList.toggle('is-edited', dirty);
      replace(saved, dirty ? 'Not saved yet.' : '');
      saved.dataset.kind = dirty ? 'pending' : '';
      if (dirty) unsaved.add(o.id);
      else unsaved.delete(o.id);
      guardUnsaved();
    };
    select.addEventListener('change', markDirty);
    notes.addEventListener('input', markDirty);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const next = Number(select.value);
      // only what was changed here: a rank alone leaves the notes another tab saved, and the other way round
      const changes = { ...(next !== o.user_rank ? { rank: next } : {}), ...(notes.value !== o.user_notes ? { notes: notes.value } : {}) };
      if (changes.rank === undefined && changes.notes === undefined) {
        replace(saved, 'Nothing changed to save.');
        saved.dataset.kind = '';
        return;
      }
      try {
        await busy(save, () => api.rankOutput(o, changes));
        o.user_rank = next;
        o.user_notes = notes.value;
        const now = effectiveRank(o);
        const fresh = rankBadge(now);
        badge.replaceWith(fresh);
        badge = fresh;
        ranked();
        replace(saved, `Saved: ${next === -1 ? `no rank of yours (the engine’s ${rankWord(o.owtf_rank)} stands)` : `ranked ${rankWord(next)}`}${o.user_notes ? ', with your notes' : ''}.`);
        saved.dataset.kind = 'ok';
        form.classList.remove('is-edited');
        unsaved.delete(o.id);
        guardUnsaved();
      } catch (err) {
        // the target or the output deleted meanwhile (another tab, another client): nothing left to save it to
        const gone = isGone(err, 'target', 'output');
        const why = gone ? 'this output (or its target) was deleted meanwhile, in another tab or by another client.' : describeError(err);
        replace(saved, `Not saved: ${why}`);
        saved.dataset.kind = 'error';
        announce(`Could not save the rank of ${name}: ${why}`, 'error');
        if (gone) {
          // leaving no longer asks about edits nothing can keep
          unsaved.delete(o.id);
          guardUnsaved();
        }
      }
    });

    return h(
      'article',
      { class: 'output card', 'data-output-id': o.id, 'aria-labelledby': `${base}-title` },
      h(
        'div',
        { class: 'output-head' },
        h('h3', { id: `${base}-title` }, `${o.plugin_type.replace(/_/g, '-')}`, h('span', { class: 'hint' }, ` ${o.plugin_key}`)),
        statusBadge(o),
        badge,
      ),
      h('p', { class: 'hint output-meta' }, o.run_time ? `Ran for ${o.run_time}` : o.status === 'Running' ? 'Running now' : '', o.exit_code !== null ? ` · exit code ${o.exit_code}` : ''),
      o.error ? h('p', { class: 'output-error' }, o.error) : null,
      ...[findingsList(o)].flat(),
      details,
      files,
      form,
    );
  }

  void load();
}

/** Only an http(s) address becomes a link: a plugin file's `javascript:` URL stays inert. */
function webUrl(url: string | undefined): boolean {
  return url !== undefined && /^https?:\/\//i.test(url);
}
