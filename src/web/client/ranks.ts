/** Ranks as words and badges (the word always shown: colour is never the only signal), and the guide's order of test groups. */
import { h } from './dom.js';

export const RANKS = [5, 4, 3, 2, 1, 0, -1] as const;

const WORDS: Record<number, string> = { [-1]: 'Unranked', 0: 'Passing', 1: 'Info', 2: 'Low', 3: 'Medium', 4: 'High', 5: 'Critical' };

export function rankWord(rank: number): string {
  return WORDS[rank] ?? 'Unranked';
}

/** The tester's rank when set, else the engine's. */
export function effectiveRank(o: { user_rank: number; owtf_rank: number }): number {
  return o.user_rank !== -1 ? o.user_rank : o.owtf_rank;
}

/** A badge with the rank's word; its colour and a shape mark (▲ high, ● medium...) say it twice more. */
export function rankBadge(rank: number, prefix = ''): HTMLElement {
  const r = WORDS[rank] === undefined ? -1 : rank;
  return h('span', { class: `rank rank-${r < 0 ? 'none' : r}`, 'data-rank': r }, `${prefix}${rankWord(r)}`);
}

/** The testing guide's chapters in its order; codes within one by number. */
const CHAPTERS = ['IG', 'CM', 'AT', 'SM', 'AZ', 'BL', 'DV', 'DS', 'WS', 'AJ', 'WGP', 'WVS', 'WSP', 'CL', 'ST'];

function guideKey(code: string): [number, number] {
  const owtf = /^OWTF-([A-Z]+)-(\d+)$/.exec(code);
  if (owtf) {
    const chapter = CHAPTERS.indexOf(owtf[1]);
    return [chapter === -1 ? CHAPTERS.length : chapter, Number(owtf[2])];
  }
  const ptes = /^PTES-(\d+)$/.exec(code);
  return ptes ? [CHAPTERS.length + 1, Number(ptes[1])] : [CHAPTERS.length + 2, 0];
}

/** Sorts test group codes in the guide's order (unknown codes last, by name). */
export function byGuideOrder(a: string, b: string): number {
  const [ca, na] = guideKey(a);
  const [cb, nb] = guideKey(b);
  return ca - cb || na - nb || (a < b ? -1 : a > b ? 1 : 0);
}
