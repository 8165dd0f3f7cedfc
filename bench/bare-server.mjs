// @ts-check
/**
 * The ceiling of this machine: a bare `node:http` server that answers every request with a fixed
 * JSON body, no routing. Run with plain node, like assessd (`node dist/assessd.cjs`):
 *
 *   node bench/bare-server.mjs --host 127.0.0.1 --port 0
 *
 * prints `bare listening on http://127.0.0.1:PORT` on stdout; SIGTERM stops it.
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '0' } } });

const BODY = Buffer.from('{"status":"success","data":{"status":"ok"}}');
const HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': BODY.length };

const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
server.listen(Number(values.port), values.host, () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  console.log(`bare listening on http://${address.address}:${address.port}`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
