/** The built-in checks' names, known without loading them (a plugin file names one; the start checks it). */
export const CHECK_NAMES = ['robots', 'banners', 'tls', 'http-methods', 'cookies', 'framing', 'cors'] as const;
export type CheckName = (typeof CHECK_NAMES)[number];
