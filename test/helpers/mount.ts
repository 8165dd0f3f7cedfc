/** Real small file systems for the full-disk tests, where the machine lets a test mount them (root). */
import { execFileSync } from 'node:child_process';

/** Mounts a tmpfs of `size` at `dir`; false where this machine does not let the test (not root, no mount). */
export function mountTmpfs(dir: string, size: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Mounts a small ext4 image at `dir` (a loop device), whose directories take blocks; false where this machine does not let the test. */
export function mountExt4(dir: string, image: string): boolean {
  try {
    execFileSync('truncate', ['-s', '4M', image]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', image], { stdio: 'ignore' });
    execFileSync('mount', ['-o', 'loop', image, dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Every block of the file system at `dir` taken by one file there. */
export function fill(dir: string, file = 'filler'): void {
  execFileSync('sh', ['-c', `dd if=/dev/zero of="$1/$2" bs=1k 2>/dev/null; true`, 'fill', dir, file]);
}
