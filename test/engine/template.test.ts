/**
 * A checklist's commands filled in for a hostile target: every command line the catalogue ships,
 * read back by bash, gets the target's values as written, and nothing in them is run. A template
 * that quotes a placeholder itself (`ffuf -u '{target_url}?FUZZ=1'`) closed its quotes around a
 * value quoted again, and a `$(...)` in the URL ran when the line was pasted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fillCommands, type FillContext } from '../../src/engine/template.ts';
import { deriveTarget } from '../../src/store/targets.ts';

/** Each of `$( )`, backticks and quotes of both kinds, as a target URL keeps them. */
const HOSTILE = 'http://127.0.0.1:1/a$(echo$IFS-n$IFS@RUN1@);b`echo$IFS-n$IFS@RUN2@`|&*\'q"x?s=\'$(echo$IFS-n$IFS@RUN3@)"y';
const CHECKLISTS = join(import.meta.dirname, '..', '..', 'data', 'plugins', 'web-external.json');
const cwd = mkdtempSync(join(tmpdir(), 'assessd-template-'));

/**
 * The words of every command bash runs for `line`: no command exists (PATH names no directory),
 * so each one comes to command_not_found_handle, which writes its words to descriptor 3 (`set`,
 * a console's command in some checklists, too).
 */
function wordsBashReads(line: string): string[] {
  const script = `command_not_found_handle() { printf '%s\\0' "$@" >&3; return 0; }\nset() { command_not_found_handle set "$@"; }\n${line}\n`;
  const run = spawnSync('/bin/bash', ['--norc', '--noprofile', '-c', script], { cwd, env: { PATH: '/nonexistent' }, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], timeout: 10_000 });
  assert.equal(run.error, undefined, `${line}: ${run.error}`);
  // and what builtins (echo, printf) write
  return [...run.output[3]!.toString().split('\0'), ...run.stdout.toString().split('\n')];
}

function context(): FillContext {
  const target = deriveTarget(1, HOSTILE, { asWritten: true });
  assert.ok(target, 'the hostile URL is a target');
  assert.equal(target.target_url, HOSTILE, 'kept as written');
  return { target };
}

test('every shipped command line, read by bash, gets the target URL as written, inside or outside the quotes its template puts around it', () => {
  const ctx = context();
  const plugins = (JSON.parse(readFileSync(CHECKLISTS, 'utf8')) as { plugins: { code: string; checklist: string }[] }).plugins;
  let lines = 0;
  let quotedByTemplate = 0;
  for (const plugin of plugins) {
    const filled = fillCommands(plugin.checklist, ctx).split('\n');
    plugin.checklist.split('\n').forEach((template, i) => {
      // a command is indented under its step; the steps' prose is not pasted into a shell
      if (!/^\s/.test(template) || !template.includes('{target_url}')) return;
      // a URL to open in a browser (the page with a fragment), not a command
      if (template.trimStart().startsWith('{')) return;
      lines++;
      if (/['"][^'"\s]*\{target_url\}/.test(template)) quotedByTemplate++;
      const words = wordsBashReads(filled[i]!);
      assert.ok(words.some((word) => word.includes(HOSTILE)), `${plugin.code}: ${filled[i]}\nbash read: ${JSON.stringify(words)}`);
      assert.ok(!words.some((word) => /@RUN\d@/.test(word) && !word.includes(HOSTILE)), `${plugin.code}: something ran: ${filled[i]}`);
    });
  }
  assert.ok(lines >= 50, `${lines} command lines with the target URL`);
  assert.ok(quotedByTemplate >= 15, `${quotedByTemplate} of them quote it in the template`);
});

test('each quoting context: a value with nothing a shell reads is left as it is; one with shell characters is one inert piece of its word', () => {
  const ctx = context();
  const plain: FillContext = { target: { ...ctx.target, target_url: 'https://app.example/path?q=1&b=*' } };
  // the glob's ? and * are read as they are between quotes only
  assert.equal(fillCommands("curl -s '{target_url}&x=1' {target_url} \"{target_url}\" {top_url}", plain), "curl -s 'https://app.example/path?q=1&b=*&x=1' 'https://app.example/path?q=1&b=*' \"https://app.example/path?q=1&b=*\" http://127.0.0.1:1");
  for (const template of ["cmd '{target_url}suffix'", 'cmd "{target_url}suffix"', 'cmd {target_url}suffix', "cmd 'it''s' \"a\\\"b\" {target_url}suffix", "cmd \"it's\" '{target_url}suffix'"]) {
    const words = wordsBashReads(fillCommands(template, ctx));
    assert.ok(words.includes(`${HOSTILE}suffix`), `${template} -> ${fillCommands(template, ctx)}: ${JSON.stringify(words)}`);
  }
  // a placeholder with no value stays as written; each line starts outside any quote
  assert.equal(fillCommands("say 'unclosed\ncmd {host_name} {nothing}", ctx), "say 'unclosed\ncmd 127.0.0.1 {nothing}");
});
