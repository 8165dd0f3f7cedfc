/**
 * A run's files through the API (.../poutput/<group>/<type>/<code>/files/): listed and opened
 * read-only, behind the Host check and the token, never outside the output directory (.., %2e%2e,
 * encoded separators, a symlink planted in the directory, a directory swapped for a symlink, a
 * FIFO), never as a page (text/plain or a download, nosniff, CSP sandbox), and 0600 on disk.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rename, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { addTarget, configure, get, queue, script, scriptDir, toolPlugin, waitForOutput, writePluginFile, type Output } from '../helpers/engine.ts';
import { request, startServer, tempDir, useToken, type TestServer } from '../helpers/server.ts';

const CODE = 'USR-FILE-001';
const KEY = `active@${CODE}`;
const TOKEN = 'files-test-token-0123456789abcdef0123456789';
const HTML = '<!doctype html><title>report</title><script>document.title = "ran"; fetch("/api/v1/sessions/")</script>';

/** The stand-in tool: a report, a binary, a nested note, and what a hostile tool output could leave (symlinks, a FIFO). */
const TOOL = [
  'cd "$1"',
  `printf '%s' '${HTML}' > report.html`,
  "printf 'a\\000b' > data.bin",
  'mkdir -p sub/dir && echo note > sub/dir/note.txt',
  'ln -s /etc/passwd passwd',
  'ln -s /etc etc',
  'mkfifo pipe',
  // names a URL cannot give the files route: listed, they could not be opened
  "printf x > 'back\\slash.txt'",
  "printf x > \"$(printf 'odd\\377name')\"",
  // a name that reads backwards past its U+202E (file<RLO>lmth.txt shows as filetxt.html)
  "printf x > \"$(printf 'file\\342\\200\\256lmth.txt')\"",
  // a second name for a file outside its directory: a hard link, which O_NOFOLLOW does not see
  'echo outside > ../outside.txt && ln ../outside.txt hardlink',
  'echo done',
].join('\n');

let server: TestServer;
let output: Output;
let base: string;

before(async () => {
  const dataDir = await tempDir();
  await writePluginFile(dataDir, 'files.json', { test_groups: [{ code: CODE }], plugins: [toolPlugin(CODE, 'TOOL_WAFW00F', ['{output_dir}'])] });
  server = await startServer({ dataDir, workers: 1, token: TOKEN });
  useToken(server.port, TOKEN);
  await configure(server, { TOOL_WAFW00F: await script(await scriptDir(), 'files.sh', TOOL) });
  const id = await addTarget(server, 'http://127.0.0.1:1/');
  await queue(server, { id: String(id), group: 'web', type: 'active', code: CODE });
  output = await waitForOutput(server, id, KEY);
  assert.equal(output.status, 'Successful', JSON.stringify(output));
  base = `/api/v1/targets/${id}/poutput/web/active/${CODE}/files/`;
});
after(() => server?.close());

const fetchFile = (name: string, options: Parameters<typeof request>[2] = {}) => request(server.url, base + name, options);

describe('listing and reading', () => {
  test('GET .../files/ lists the regular files, nested ones by path; symlinks, hard links and the FIFO are not listed', async () => {
    const files: { name: string; size: number; modified: string }[] = await get(server, base);
    assert.deepEqual(files.map((f) => f.name), ['data.bin', 'file\u202Elmth.txt', 'report.html', 'stderr.txt', 'stdout.txt', 'sub/dir/note.txt']);
    const note = files.find((f) => f.name === 'sub/dir/note.txt')!;
    assert.equal(note.size, 5);
    assert.ok(!Number.isNaN(Date.parse(note.modified)));
  });

  test('a text file is text/plain, inline, in a sandbox, not sniffed, not cached', async () => {
    const res = await fetchFile('sub/dir/note.txt');
    assert.equal(res.status, 200);
    assert.equal(res.text, 'note\n');
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(res.headers['content-length'], '5');
    assert.match(res.headers['content-disposition']!, /^inline; filename="note\.txt"/);
    assert.equal(res.headers['content-security-policy'], "sandbox; default-src 'none'");
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  test('a tool\'s HTML report is answered as plain text (its source), never as a page; download=true makes it an attachment', async () => {
    const res = await fetchFile('report.html');
    assert.equal(res.status, 200);
    assert.equal(res.text, HTML);
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(res.headers['content-security-policy'], "sandbox; default-src 'none'");
    const download = await fetchFile('report.html?download=true');
    assert.match(download.headers['content-disposition']!, /^attachment; filename="report\.html"/);
    assert.equal(download.headers['content-type'], 'text/plain; charset=utf-8');
  });

  test('a name with a bidi control offers it in no file name: filename and filename* without it (file<U+202E>lmth.txt would save as filetxt.html)', async () => {
    const res = await fetchFile(`${encodeURIComponent('file\u202Elmth.txt')}?download=true`);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-disposition'], `attachment; filename="file-lmth.txt"; filename*=UTF-8''filelmth.txt`);
  });

  test('a file holding a NUL byte is a download (application/octet-stream, attachment), bytes as written', async () => {
    const res = await fetchFile('data.bin');
    assert.equal(res.status, 200);
    assert.deepEqual([...res.raw], [0x61, 0, 0x62]);
    assert.equal(res.headers['content-type'], 'application/octet-stream');
    assert.match(res.headers['content-disposition']!, /^attachment; filename="data\.bin"/);
  });

  test('HEAD answers the headers without the bytes', async () => {
    const res = await fetchFile('sub/dir/note.txt', { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-length'], '5');
    assert.equal(res.text, '');
  });

  test('files on disk are 0600, directories 0700 (the tool\'s own included)', async () => {
    const dir = join(server.dataDir, 'outputs', output.output_path);
    for (const file of ['report.html', 'stdout.txt', 'sub/dir/note.txt']) assert.equal((await stat(join(dir, file))).mode & 0o777, 0o600, file);
    for (const sub of ['', 'sub', 'sub/dir']) assert.equal((await stat(join(dir, sub))).mode & 0o777, 0o700, sub || '(the output directory)');
  });
});

describe('never outside the output directory', () => {
  const refused: [path: string, status: number, says: RegExp][] = [
    ['../../../../../sessions.json', 400, /"\.\."/],
    ['%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/sessions.json', 400, /"\.\."/],
    ['..%2f..%2f..%2f..%2f..%2fsessions.json', 400, /inside a segment/],
    ['sub%2fdir%2fnote.txt', 400, /inside a segment/],
    ['sub%5cdir%5cnote.txt', 400, /inside a segment/],
    ['note.txt%00', 400, /NUL/],
    ['sub//dir/note.txt', 400, /empty/],
    ['./report.html', 400, /"\."/],
    ['passwd', 404, /symbolic link/],
    ['etc/passwd', 404, /outside the output directory/],
    ['pipe', 404, /not a regular file|named pipe/],
    ['hardlink', 404, /a hard link/],
    ['sub', 404, /directory|not a regular file/],
    ['nope.txt', 404, /missing/],
  ];
  for (const [path, status, says] of refused) {
    test(`GET .../files/${path} is ${status}, saying why`, async () => {
      const res = await fetchFile(path);
      assert.equal(res.status, status, res.text);
      assert.equal(res.json.status, 'fail');
      assert.match(res.json.data.file, says);
      assert.doesNotMatch(res.text, /root:|"sessions"/);
    });
  }

  test('another output\'s files: 400 Invalid plugin output reference provided; another target\'s: the same', async () => {
    assert.equal((await request(server.url, base.replace(CODE, 'OWTF-IG-001'))).json.message, 'Invalid plugin output reference provided');
    const other = await addTarget(server, 'http://127.0.0.1:2/');
    assert.equal((await request(server.url, base.replace(/targets\/\d+\//, `targets/${other}/`) + 'report.html')).json.message, 'Invalid plugin output reference provided');
  });
});

describe('the same access control as every route', () => {
  test('without the token: 401, nothing of the file', async () => {
    const res = await fetchFile('report.html', { auth: false });
    assert.equal(res.status, 401);
    assert.doesNotMatch(res.text, /report/);
  });

  test('a Host not allowed: 403', async () => {
    const res = await fetchFile('report.html', { headers: { host: 'rebound.example' } });
    assert.equal(res.status, 403);
  });

  test('the output directory swapped for a symlink to a directory holding its files\' names: the output\'s text reads none of them (it showed a copy of /etc/passwd named stdout.txt)', async () => {
    const dir = join(server.dataDir, 'outputs', output.output_path);
    const elsewhere = await tempDir();
    await writeFile(join(elsewhere, 'stdout.txt'), 'root:x:0:0:SECRET\n');
    await writeFile(join(elsewhere, 'stderr.txt'), 'SECRET too\n');
    await rename(dir, `${dir}.moved`);
    await symlink(elsewhere, dir);
    try {
      const [shown] = await get(server, `/api/v1/targets/${output.target_id}/poutput/web/active/${CODE}`);
      assert.ok(!shown.output.includes('SECRET'), shown.output);
      assert.match(shown.output, /\[stdout\.txt is outside the output directory\]/);
    } finally {
      await unlink(dir);
      await rename(`${dir}.moved`, dir);
    }
  });

  test('the output directory itself swapped for a symlink to the data directory (by the tool that wrote it): its files are 404, none of the data directory is read', async () => {
    const dir = join(server.dataDir, 'outputs', output.output_path);
    await rename(dir, `${dir}.moved`);
    await symlink(server.dataDir, dir);
    try {
      for (const name of ['sessions.json', 'configuration.json']) {
        const res = await fetchFile(name);
        assert.equal(res.status, 404, res.text);
        assert.match(res.json.data.file, /outside the output directory/);
        assert.ok(!res.text.includes(TOKEN), res.text);
      }
    } finally {
      await unlink(dir);
      await rename(`${dir}.moved`, dir);
    }
    assert.equal((await fetchFile('report.html')).status, 200);
  });

  test('read-only: PATCH and DELETE of a file path change nothing (405, GET alone is allowed), the file stays', async () => {
    for (const method of ['PATCH', 'DELETE']) {
      const res = await fetchFile('report.html', { method, form: { user_rank: '1' } });
      assert.deepEqual([res.status, res.headers.allow, res.json.message], [405, 'GET, HEAD', 'Method not allowed'], method);
    }
    assert.equal((await fetchFile('report.html')).status, 200);
  });
});
