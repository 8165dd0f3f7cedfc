/** The intercepting proxy as the API shows it: where it listens, its CA (the certificate only), its counts. */
import { HttpError, success } from '../http/jsend.js';
import type { ProxyCounts } from '../proxy/index.js';
import { PROXY_MESSAGES } from './messages.js';
import type { ApiRouter } from './openapi.js';

/** What the API reads of a running proxy; undefined when assessd runs without one (--no-proxy). */
export interface ProxyView {
  host: string;
  port: number;
  /** The CA's certificate (PEM), fingerprint and subject; made on the first start. */
  ca(): Promise<{ certPem: string; fingerprint256: string; subject: string }>;
  counts(): ProxyCounts;
  /** Whether a client needs the token as its Proxy-Authorization password (beyond loopback). */
  needsToken: boolean;
}

const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);

export function registerProxy(router: ApiRouter, proxy: ProxyView | undefined): void {
  router.add(
    'GET',
    '/api/v1/proxy',
    async () => {
      if (!proxy) return success({ enabled: false });
      const ca = await proxy.ca();
      return success({
        enabled: true,
        host: proxy.host,
        port: proxy.port,
        url: `http://${urlHost(proxy.host === '0.0.0.0' ? '127.0.0.1' : proxy.host === '::' ? '::1' : proxy.host)}:${proxy.port}`,
        needs_token: proxy.needsToken,
        ca: { fingerprint256: ca.fingerprint256, subject: ca.subject, url: '/api/v1/proxy/ca.pem' },
        counts: proxy.counts(),
      });
    },
    {
      summary: 'The intercepting proxy (extension): where it listens, its CA\'s fingerprint, what it has forwarded',
      ok: {
        status: 200,
        description: '`enabled` false under --no-proxy; else host, port, url, needs_token, ca {fingerprint256, subject, url}, counts',
        data: { type: 'object', properties: { enabled: { type: 'boolean' } }, required: ['enabled'] },
      },
    },
  );
  router.add(
    'GET',
    '/api/v1/proxy/ca.pem',
    async () => {
      if (!proxy) throw new HttpError(404, PROXY_MESSAGES.disabled);
      const { certPem } = await proxy.ca();
      return {
        status: 200,
        body: certPem,
        headers: {
          'Content-Type': 'application/x-pem-file',
          'Content-Disposition': 'attachment; filename="assessd-proxy-ca.pem"',
          'Cache-Control': 'no-store',
        },
      };
    },
    {
      summary: "The proxy's CA certificate (extension), to tell a browser or curl to trust it; never its key",
      ok: { status: 200, description: 'The certificate, PEM', type: 'application/x-pem-file', schema: { type: 'string' }, headers: { 'Content-Disposition': 'attachment; filename="assessd-proxy-ca.pem"' } },
      fails: { 404: [PROXY_MESSAGES.disabled] },
    },
  );
}
