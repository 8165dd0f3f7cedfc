import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { link, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { listOutputFiles, MAX_DIRECTORIES, MAX_LISTED } from '../../src/engine/output-files.ts';
import { readRegularFile } from '../../src/engine/regular-file.ts';
import { tempDir } from '../helpers/server.ts';

test('a regular file is read up to the bound, its whole size said', async () => {
  const dir = await tempDir();
  try {
    await writeFile(join(dir, 'out.txt'), 'x'.repeat(1000));
    const read = await readRegularFile(join(dir, 'out.txt'), 10);
    assert.ok(read.ok);
    assert.equal(read.bytes.toString(), 'x'.repeat(10));
    assert.equal(read.size, 1000);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a FIFO, a socket, a device, a directory and a symlink are refused at once, saying what they are (a FIFO never waits for a writer)', async () => {
  const dir = await tempDir();
  const socket = createServer();
  try {
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    await new Promise<void>((resolve) => socket.listen(join(dir, 'socket'), resolve));
    await mkdir(join(dir, 'dir'));
    await symlink('/etc/passwd', join(dir, 'link'));
    await writeFile(join(dir, 'outside'), 'secret');
    await link(join(dir, 'outside'), join(dir, 'hardlink'));
    const cases: [string, RegExp][] = [
      [join(dir, 'fifo'), /named pipe \(FIFO\)/],
      [join(dir, 'dir'), /a directory/],
      ['/dev/zero', /a device/],
      [join(dir, 'link'), /symbolic link/],
      [join(dir, 'hardlink'), /a hard link/],
      [join(dir, 'missing'), /missing/],
    ];
    for (const [path, says] of cases) {
      const read = await readRegularFile(path, 1024);
      assert.equal(read.ok, false, path);
      assert.match(read.ok ? '' : read.reason, says, path);
    }
    // a socket file cannot be opened at all (ENXIO): refused, never waited on
    const sock = await readRegularFile(join(dir, 'socket'), 1024);
    assert.equal(sock.ok, false);
  } finally {
    socket.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('an output directory lists at most MAX_LISTED regular files, says there are more', async () => {
  const dir = await tempDir();
  try {
    for (const sub of ['a', 'b/c']) await mkdir(join(dir, sub), { recursive: true });
    // touch makes them ~10 times sooner than writeFileSync does here
    execFileSync('sh', ['-c', `seq 1 ${MAX_LISTED} | sed 's/^/f/' | xargs touch`], { cwd: join(dir, 'a') });
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, 'b/c', `g${i}`), 'x');
    const { files, more } = await listOutputFiles(dir);
    assert.equal(files.length, MAX_LISTED);
    assert.equal(more, true);
    assert.deepEqual(files.map((f) => f.name), [...files.map((f) => f.name)].sort(), 'by name');
    const fewer = await listOutputFiles(join(dir, 'b'));
    assert.deepEqual({ count: fewer.files.length, more: fewer.more, first: fewer.files[0] && { name: fewer.files[0].name, size: fewer.files[0].size } }, { count: 20, more: false, first: { name: 'c/g0', size: 1 } });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an output directory of more empty directories than a listing opens: it stops there and says there may be more (each listing walked them all: 200,000 took 20 s)', async () => {
  const dir = await tempDir();
  try {
    execFileSync('sh', ['-c', `seq 1 ${MAX_DIRECTORIES + 1} | sed 's/^/d/' | xargs mkdir`], { cwd: dir });
    const { files, more } = await listOutputFiles(dir);
    assert.deepEqual({ files: files.length, more }, { files: 0, more: true });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
