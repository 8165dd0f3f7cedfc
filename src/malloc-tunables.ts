/**
 * glibc's allocator as `npm start` sets it (package.json's start script puts this in
 * GLIBC_TUNABLES where the kernel gives 2 MiB transparent huge pages on request, `madvise`; never
 * over a GLIBC_TUNABLES the user set, empty included): transparent huge pages for the allocator's heap
 * (`hugetlb=1`, with a 4 MiB top pad so that the heap grows by whole huge pages) and one arena for
 * every thread (the main thread makes nearly every allocation; an arena per thread, each grown by
 * a huge page, held ~8 MB more at idle). Where a page touched for the first time costs ~16 us (the
 * virtual machines this project is measured on), the start touches ~350 fewer pages of memory:
 * ~10 ms sooner (docs/PERFORMANCE.md). glibc reads it as the process starts; other C libraries
 * (musl, macOS, Windows) ignore it.
 */
export const START_MALLOC_TUNABLES = 'glibc.malloc.hugetlb=1:glibc.malloc.top_pad=4194304:glibc.malloc.arena_max=1';

/**
 * The programs the server runs (the tools, openssl) get the environment the user gave, not the
 * server's own allocator setting: removed from `env` when it is the start script's.
 */
export function dropStartTunables(env: NodeJS.ProcessEnv = process.env): void {
  if (env.GLIBC_TUNABLES === START_MALLOC_TUNABLES) delete env.GLIBC_TUNABLES;
}
