/**
 * The Proxy view: where the intercepting proxy listens, its CA to download and its fingerprint,
 * and the exact steps to browse a target through it with Chromium, Firefox and curl (and to remove
 * the CA after the engagement). What the proxy forwarded is counted at the bottom.
 */
import { api, type ProxyInfo } from './api.js';
import { h, replace } from './dom.js';
import type { ViewContext } from './router.js';
import { errorState, loadingState, viewHeading } from './ui.js';

const CA_FILE = 'assessd-proxy-ca.pem';
/** Deletes the name until none is left: a CA made again was trusted under the same name. */
const UNTRUST_COMMAND = 'while certutil -d sql:$HOME/.pki/nssdb -D -n "assessd proxy CA" 2>/dev/null; do :; done';

/** A command to copy, in a block a screen reader announces as code. */
const command = (text: string) => h('pre', { class: 'command' }, h('code', {}, text));

function steps(info: Extract<ProxyInfo, { enabled: true }>): HTMLElement[] {
  const proxy = info.url;
  const credentials = info.needs_token ? ' (user: any, password: the API token)' : '';
  const curlUser = info.needs_token ? ' --proxy-user "tester:$TOKEN"' : '';
  return [
    h('section', { 'aria-labelledby': 'proxy-ca' },
      h('h2', { id: 'proxy-ca' }, 'Its certificate authority'),
      h('p', {}, 'To read HTTPS, the proxy answers each site with a certificate it signs with a CA made for this data directory. A browser or tool must trust that CA: ',
        h('a', { href: api.proxyCaUrl, download: CA_FILE }, 'download the CA certificate'), ` (${CA_FILE}; its key never leaves the server).`),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Subject'), h('dd', {}, info.ca.subject),
        h('dt', {}, 'SHA-256 fingerprint'), h('dd', { class: 'fingerprint' }, info.ca.fingerprint256)),
      h('p', {}, 'Check the fingerprint your browser shows against this one before you trust it.')),
    h('section', { 'aria-labelledby': 'proxy-curl' },
      h('h2', { id: 'proxy-curl' }, 'curl'),
      command(`curl -x ${proxy}${curlUser} --cacert ${CA_FILE} https://target.example/`)),
    h('section', { 'aria-labelledby': 'proxy-chromium' },
      h('h2', { id: 'proxy-chromium' }, 'Chromium'),
      h('ol', {},
        h('li', {}, 'Trust the CA in the profile\'s certificate store (Linux: the NSS database; certutil is in the libnss3-tools package). The first line makes the database where Chromium has not made it yet:',
          command(`mkdir -p $HOME/.pki/nssdb && { [ -f $HOME/.pki/nssdb/cert9.db ] || certutil -d sql:$HOME/.pki/nssdb -N --empty-password; }\ncertutil -d sql:$HOME/.pki/nssdb -A -t "C,," -n "assessd proxy CA" -i ${CA_FILE}`),
          'or in Settings → Privacy and security → Security → Manage certificates → Authorities → Import, ticking "Trust this certificate for identifying websites". Another data directory\'s CA, trusted already under that name, is refused (SEC_ERROR_ADDING_CERT): give this one a name of its own (-n "assessd proxy CA 2").'),
        h('li', {}, `Start a browser of its own that goes through the proxy${credentials}:`,
          command(`chromium --user-data-dir="$(mktemp -d)" --proxy-server=${proxy} --proxy-bypass-list='<-loopback>'`),
          '(<-loopback> sends local targets through the proxy too; Chromium skips it for them otherwise).'))),
    h('section', { 'aria-labelledby': 'proxy-firefox' },
      h('h2', { id: 'proxy-firefox' }, 'Firefox'),
      h('ol', {},
        h('li', {}, 'Settings → Privacy & Security → Certificates → View Certificates → Authorities → Import the CA, and tick "Trust this CA to identify websites".'),
        h('li', {}, `Settings → General → Network Settings → Manual proxy configuration: HTTP Proxy ${info.host === '0.0.0.0' ? '127.0.0.1' : info.host}, Port ${info.port}, and "Also use this proxy for HTTPS"${credentials}.`),
        h('li', {}, 'For targets on this machine, set network.proxy.allow_hijacking_localhost to true in about:config.'))),
    h('section', { 'aria-labelledby': 'proxy-after' },
      h('h2', { id: 'proxy-after' }, 'After the engagement'),
      h('p', {}, 'Whoever holds the CA\'s key can impersonate any site to a browser that trusts it. Remove the CA from each browser you trusted it in:'),
      h('ul', {},
        h('li', {}, 'Chromium (every assessd CA trusted under that name, an earlier one too): ', h('code', {}, UNTRUST_COMMAND), ', or Manage certificates → Authorities → delete it.'),
        h('li', {}, 'Firefox: View Certificates → Authorities → select it → Delete or Distrust.')),
      h('p', {}, 'For a new CA: remove the old one from the browsers as above, stop assessd, delete DATA_DIR/proxy/ca.pem (it holds the old key: keep no copy), and start it again; then trust the new one.')),
  ];
}

function counts(info: Extract<ProxyInfo, { enabled: true }>): HTMLElement {
  const c = info.counts;
  return h('section', { 'aria-labelledby': 'proxy-counts' },
    h('h2', { id: 'proxy-counts' }, 'Forwarded so far'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Requests'), h('dd', {}, String(c.requests)),
      h('dt', {}, 'Stored as a target\'s transactions'), h('dd', {}, String(c.recorded - c.dropped)),
      h('dt', {}, 'A target\'s, but not stored (the disk refused, or the target was deleted)'), h('dd', {}, String(c.dropped)),
      h('dt', {}, 'Forwarded, not a target\'s'), h('dd', {}, String(c.unrecorded)),
      h('dt', {}, 'Tunnels read (HTTPS, or HTTP inside)'), h('dd', {}, String(c.intercepted)),
      h('dt', {}, 'Tunnels passed through (neither TLS nor HTTP)'), h('dd', {}, String(c.tunnels)),
      h('dt', {}, 'Targets that failed'), h('dd', {}, String(c.upstreamErrors)),
      h('dt', {}, 'Requests refused'), h('dd', {}, String(c.refused))));
}

export function proxyView({ root, signal }: ViewContext): void {
  const body = h('div', {}, loadingState());
  root.append(...viewHeading('Proxy', 'Browse a target through assessd: every request to a target\'s host and port becomes one of its transactions.'), body);
  const load = async () => {
    replace(body, loadingState());
    try {
      const info = await api.proxy(signal);
      if (!info.enabled) {
        replace(body, h('p', {}, 'The proxy is off: this server was started with --no-proxy.'));
        return;
      }
      replace(body,
        h('dl', { class: 'facts' },
          h('dt', {}, 'Proxy'), h('dd', {}, h('code', {}, info.url)),
          h('dt', {}, 'Needs the token'), h('dd', {}, info.needs_token ? 'Yes: as the password of its Basic login (it listens beyond loopback)' : 'No (loopback only)')),
        ...steps(info),
        counts(info));
    } catch (err) {
      if (!signal.aborted) replace(body, errorState(err, () => void load()));
    }
  };
  void load();
}
