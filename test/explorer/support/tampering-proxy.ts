/**
 * A test double of the API: a loopback proxy that passes everything through to the real service
 * except inclusion proofs, whose first audit-path node it alters (or, for a one-transaction block,
 * adds one). An explorer loaded through it must show those proofs as not verified.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const PROOF_PATH = /^\/api\/transactions\/0x[0-9a-fA-F]{64}\/proof$/;
const BODY_BYTES_MAX = 1024 * 1024;

export type TamperingProxy = {
  url: string;
  /** How many proofs it has altered so far. */
  tampered(): number;
  close(): Promise<void>;
};

export async function startTamperingProxy(target_url: string): Promise<TamperingProxy> {
  const target = new URL(target_url);
  let tampered = 0;
  const server = http.createServer((request, response) => {
    const is_proof = PROOF_PATH.test((request.url ?? '').split('?')[0] ?? '');
    const headers = { ...request.headers, host: target.host };
    if (is_proof) delete headers['accept-encoding'];
    const upstream = http.request({ hostname: target.hostname, port: target.port, path: request.url, method: request.method, headers }, (answer) => {
      if (!is_proof || answer.statusCode !== 200) {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
        return;
      }
      readBody(answer).then((body) => {
        const proof = JSON.parse(body) as { audit_path: string[] };
        proof.audit_path = alterPath(proof.audit_path);
        tampered += 1;
        const altered = JSON.stringify(proof);
        const { 'content-length': _length, ...rest } = answer.headers;
        response.writeHead(200, { ...rest, 'content-length': Buffer.byteLength(altered) });
        response.end(altered);
      }, (error: unknown) => response.destroy(error as Error));
    });
    upstream.on('error', () => {
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
      response.end('upstream failed');
    });
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tampered: () => tampered,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Flips the last hex digit of the nearest sibling; an empty path gets a made-up sibling. */
export function alterPath(audit_path: string[]): string[] {
  const [first, ...rest] = audit_path;
  if (first === undefined) return [`0x${'ab'.repeat(32)}`];
  const last = first.slice(-1);
  return [first.slice(0, -1) + (last === '0' ? '1' : '0'), ...rest];
}

function readBody(stream: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > BODY_BYTES_MAX) reject(new Error('proof body too large'));
      chunks.push(chunk);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
  });
}
