/** Scope: a transaction is in its target's scope when its host and port are the target's. */

/** The host (lower case, IPv6 without brackets) and port (the scheme's default when absent) of a URL. */
export function hostAndPort(url: string): { host: string; port: string } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { host: host.toLowerCase(), port: parsed.port || (parsed.protocol === 'https:' ? '443' : '80') };
}

/** A test of URLs against a target's host name and port number. */
export function scopeTest(hostName: string, portNumber: string): (url: string) => boolean {
  const host = hostName.toLowerCase();
  return (url) => {
    const hp = hostAndPort(url);
    return hp !== undefined && hp.host === host && hp.port === portNumber;
  };
}
