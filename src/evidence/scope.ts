/** Scope: a transaction is in its target's scope when its host and port are the target's. */

/** A host (a URL's, or an authority's host part) as a socket takes it: an IPv6 address without its brackets. */
export function bareHost(host: string | URL): string {
  const name = typeof host === 'string' ? host : host.hostname;
  return name.startsWith('[') ? name.slice(1, -1) : name;
}

/** The host (lower case, IPv6 without brackets) and port (the scheme's default when absent) of a URL (ws and wss as http and https). */
export function hostAndPort(url: string | URL): { host: string; port: string } | undefined {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return undefined;
  }
  return { host: bareHost(parsed).toLowerCase(), port: parsed.port || (parsed.protocol === 'https:' || parsed.protocol === 'wss:' ? '443' : '80') };
}

/** A test of URLs against a target's host name and port number. */
export function scopeTest(hostName: string, portNumber: string): (url: string) => boolean {
  const host = hostName.toLowerCase();
  return (url) => {
    const hp = hostAndPort(url);
    return hp !== undefined && hp.host === host && hp.port === portNumber;
  };
}
