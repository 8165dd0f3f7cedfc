/**
 * After a crash: the runs the store says were in progress. Each program group the dead server
 * left is ended (its recorded pid checked against its recorded start time, so a reused pid is
 * never signalled; a run whose pid was not yet recorded, and a child that left its group, are
 * found by the marker in their environment), and its work goes back to the head of the worklist,
 * unless a crash had cut it short already: then it is recorded Crashed (no crash loop).
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Store } from '../store/store.js';
import { endStaleGroup, markedOutput, processStartTime, readProcStat, runMarker } from './proc.js';

/** Process-group leaders whose environment carries this data directory's marker, by output id. */
function markedGroups(marker: string): Map<number, number[]> {
  const found = new Map<number, number[]>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name));
  } catch {
    return found;
  }
  for (const name of pids) {
    try {
      const output = markedOutput(readFileSync(`/proc/${name}/environ`, 'latin1'), marker);
      if (output === undefined) continue;
      const pgrp = readProcStat(Number(name))?.pgrp;
      if (pgrp !== Number(name)) continue;
      found.set(Number(output), [...(found.get(Number(output)) ?? []), pgrp]);
    } catch {
      // gone meanwhile, or another user's
    }
  }
  return found;
}

/** Ends what a crashed server left running and requeues its works; answers how many runs it found. */
export async function recoverRuns(store: Store, dataDir: string, log: (line: string) => void): Promise<number> {
  const running = [...store.state.outputs.values()].filter((row) => row.run);
  let marked: Map<number, number[]> | undefined;
  for (const row of running) {
    const { pid, pidStart } = row.run!;
    const groups: { pid: number; start: string }[] = [];
    if (pid !== null && pidStart !== null) groups.push({ pid, start: pidStart });
    // the group's pid not yet recorded, or a child that left the group (setsid): found by the marker
    for (const leader of (marked ??= markedGroups(runMarker(dataDir))).get(row.id) ?? []) {
      if (leader !== pid) groups.push({ pid: leader, start: processStartTime(leader) ?? '' });
    }
    for (const group of groups) {
      const ended = await endStaleGroup(group.pid, group.start);
      if (ended === 'ended') log(`ended the process group ${group.pid} of ${row.plugin_key} on target ${row.target_id}, left running by a server that stopped`);
      if (ended === 'reused') log(`process ${group.pid} is no longer ${row.plugin_key}'s (its pid was reused): left alone`);
    }
    const at = Date.now();
    if ((row.run!.crashes ?? 0) >= 1) {
      // twice in a row: what the run reads (a tool's output, a target's answer) may be what ends the server
      const message = 'the server stopped while it ran, for the second time in a row: not queued again (queue it with force_overwrite=true to retry)';
      log(`${row.plugin_key} on target ${row.target_id}: ${message}`);
      const target = store.state.targets.get(row.target_id)?.target.target_url ?? `target ${row.target_id}`;
      await store.change({ op: 'endRun', output: row.id, at, status: 'Crashed', owtfRank: -1, findings: [], exitCode: null, error: message, crash: { message: `${row.plugin_key} on ${target}: ${message}`, traceback: message } });
      continue;
    }
    await store.change({ op: 'requeueRun', output: row.id, at, reason: 'the server stopped while it ran; queued again', crashed: true });
  }
  return running.length;
}
