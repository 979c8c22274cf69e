/**
 * The SDK in a real browser: `npm run check:browser` (needs Debian's `chromium`; not part of `npm test`,
 * whose machines need not have a browser). Starts the service, serves a page that loads the SDK's
 * built ES modules as they are (no bundler) from the same origin as the API, and has headless Chromium
 * submit, wait, and verify the transaction, its proof, the chain and a tampered block with WebCrypto.
 * Exits 0 when the page reports success.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { ROOT, ServiceProcess } from '../support/service-process.js';

const CHROMIUM = process.argv[2] ?? '/usr/bin/chromium';
const SDK_DIST = path.join(ROOT, 'packages/client/dist');
const VIRTUAL_TIME_BUDGET_MS = 30_000;

const PAGE = `<!doctype html><html><body><pre id="out">running</pre><script type="module">
import { TabulaClient } from '/sdk/packages/client/src/index.js';
const out = document.getElementById('out');
try {
  const tabula = new TabulaClient({ baseUrl: location.origin, jwt: new URLSearchParams(location.search).get('jwt') });
  const { tx_hash } = await tabula.submitTransaction({ from: 'treasury', to: 'browser', amount: '90071992.54740993', token: 'TAB', type: 'mint' });
  const tx = await tabula.waitForTransaction(tx_hash, { intervalMs: 50 });
  await tabula.verifyTransaction(tx);
  const { header } = await tabula.verifyInclusion(await tabula.getProof(tx_hash));
  const chain = await tabula.verifyChain();
  const tampered = { ...(await tabula.getBlock(header.number)), timestamp: header.timestamp + 1 };
  const caught = await tabula.verifyBlock(tampered).then(() => 'nothing', (error) => error.code);
  out.textContent = 'RESULT ' + JSON.stringify({ status: tx.status, amount_text: tx.amount_text, blocks: chain.blocks_verified, caught });
} catch (error) {
  out.textContent = 'RESULT ' + JSON.stringify({ error: error.name + ': ' + error.message });
}
</script></body></html>`;

/** The page, the SDK's files, and everything else passed on to the service (one origin, no CORS). */
function startOrigin(service_url: string): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    void (async () => {
      const url = request.url ?? '/';
      if (url.startsWith('/page.html')) return void response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      if (url.startsWith('/sdk/')) {
        const file = path.resolve(SDK_DIST, `.${url.slice('/sdk'.length)}`);
        if (!file.startsWith(SDK_DIST) || !fs.existsSync(file)) return void response.writeHead(404).end();
        return void response.writeHead(200, { 'content-type': 'text/javascript' }).end(fs.readFileSync(file));
      }
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type', 'idempotency-key', 'x-api-key']) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const method = request.method ?? 'GET';
      const upstream = await fetch(`${service_url}${url}`, { method, headers, ...(method === 'GET' ? {} : { body: Buffer.concat(chunks) }) });
      const passed: Record<string, string> = {};
      for (const name of ['content-type', 'retry-after', 'idempotent-replayed']) {
        const value = upstream.headers.get(name);
        if (value !== null) passed[name] = value;
      }
      response.writeHead(upstream.status, passed).end(await upstream.text());
    })().catch(() => response.destroy());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function dumpDom(url: string, profile: string): Promise<string> {
  const args = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`, `--virtual-time-budget=${VIRTUAL_TIME_BUDGET_MS}`, '--dump-dom', url,
  ];
  return new Promise((resolve, reject) => {
    execFile(CHROMIUM, args, { timeout: 90_000, maxBuffer: 1024 * 1024 }, (error, stdout) => (error === null ? resolve(stdout) : reject(error)));
  });
}

async function main(): Promise<number> {
  const service = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '100' } });
  const origin = await startOrigin(service.url);
  try {
    const { port } = origin.address() as AddressInfo;
    const jwt = await service.token('treasury', { admin: true });
    const dom = await dumpDom(`http://127.0.0.1:${port}/page.html?jwt=${jwt}`, path.join(service.data_dir, 'chromium-profile'));
    const result = /RESULT (\{[^<]*\})/.exec(dom)?.[1];
    process.stdout.write(`${result ?? 'no result on the page'}\n`);
    const parsed = result === undefined ? {} : (JSON.parse(result.replaceAll('&quot;', '"')) as Record<string, unknown>);
    const passed = parsed.status === 'confirmed' && parsed.amount_text === '90071992.54740993' && parsed.caught === 'block_hash_mismatch';
    process.stdout.write(passed ? 'the SDK works in Chromium\n' : 'FAILED\n');
    return passed ? 0 : 1;
  } finally {
    origin.close();
    await service.close();
  }
}

main().then((status) => { process.exitCode = status; }, (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
