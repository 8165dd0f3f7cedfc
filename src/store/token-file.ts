/** The API token kept in the data directory: generated once, reused by every later start. */
import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { crypto } from '../lazy-builtins.js';
import { nodeFileSystem } from './atomic-file.js';
import { readDataFile } from './data-file.js';
import { DataFileError } from './state.js';

export const TOKEN_FILE = 'token';
/** What a token may hold: printable ASCII, no spaces (it travels in a header). */
export const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

/** 32 random bytes, base64url: 43 characters, 256 bits. */
export function generateToken(): string {
  return crypto().randomBytes(32).toString('base64url');
}

/**
 * The token in `dir/token`, made (mode 0600, written atomically) if there is none. A token file
 * that others can read is narrowed to 0600, with a log line; one holding no token stops the start.
 */
export async function loadOrCreateToken(dir: string, log: (line: string) => void): Promise<{ token: string; created: boolean }> {
  const file = join(dir, TOKEN_FILE);
  const text = readDataFile(file)?.toString('utf8');
  if (text === undefined) {
    const token = generateToken();
    await nodeFileSystem.writeFileAtomic(file, `${token}\n`);
    await nodeFileSystem.syncDir(dir);
    return { token, created: true };
  }
  const token = text.trim();
  if (!TOKEN_PATTERN.test(token)) throw new DataFileError(file, 'not a token (printable ASCII without spaces); delete it to have a new one generated');
  if ((statSync(file).mode & 0o077) !== 0) {
    chmodSync(file, 0o600);
    log(`${file} could be read by other users: its mode is now 0600`);
  }
  return { token, created: false };
}
