/** postject (dev dependency of the single-executable build) ships no types: the one call used. */
declare module 'postject' {
  export function inject(
    file: string,
    resource: string,
    data: Buffer,
    options?: { sentinelFuse?: string; machoSegmentName?: string; overwrite?: boolean },
  ): Promise<void>;
}
