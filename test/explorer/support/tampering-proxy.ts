/**
 * A test double of the API: a loopback proxy that passes everything through to the real service
 * except what its current lie alters. By default it alters inclusion proofs (their first audit-path
 * node, or, for a one-transaction block, adds one); it can instead rewrite a transaction's amount,
 * alter blocks' history proofs or consistency proofs (a fork), or serve checkpoints (and the checkpoint
 * key) signed by another key. An explorer loaded through it must show what it alters as not verified.
 * Every answer passes without validators and with `Cache-Control: no-store`, and requests lose their
 * conditional headers: the service marks sealed records immutable, so a browser would otherwise keep
 * an honest answer and never see a lie switched on later (a server that means to lie does not let its
 * honest answers be cached either).
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const BODY_BYTES_MAX = 1024 * 1024;

export type Lie = 'none' | 'transaction-proof' | 'transaction' | 'block-proof' | 'consistency' | 'foreign-key';

type Rewrite = (body: any) => unknown;

export type TamperingProxy = {
  url: string;
  /** How many answers it has altered so far. */
  tampered(): number;
  /** Changes what it alters from now on. */
  lie(lie: Lie): void;
  /** The key id of the other key it signs checkpoints with under the `foreign-key` lie. */
  foreign_key_id: string;
  close(): Promise<void>;
};

/** The other key: an Ed25519 pair, its raw public key and its key id (the first 8 bytes of SHA-256, hex). */
function foreignKey(): { private_key: KeyObject; public_key: string; key_id: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  return { private_key: privateKey, public_key: raw.toString('base64'), key_id: createHash('sha256').update(raw).digest('hex').slice(0, 16) };
}

function rewriteFor(lie: Lie, path: string, key: ReturnType<typeof foreignKey>): Rewrite | null {
  switch (lie) {
    case 'transaction-proof':
      return /^\/api\/transactions\/0x[0-9a-fA-F]{64}\/proof$/.test(path) ? (proof) => ({ ...proof, audit_path: alterPath(proof.audit_path) }) : null;
    case 'transaction':
      return /^\/api\/transactions\/0x[0-9a-fA-F]{64}$/.test(path) ? (tx) => ({ ...tx, amount: Number(tx.amount) * 2 }) : null;
    case 'block-proof':
      return /^\/api\/blocks\/[0-9]+\/proof$/.test(path) ? (proof) => ({ ...proof, audit_path: alterPath(proof.audit_path) }) : null;
    case 'consistency':
      return path === '/api/chain/consistency' ? (proof) => ({ ...proof, proof: alterPath(proof.proof) }) : null;
    case 'foreign-key':
      if (path === '/.well-known/tabula-checkpoint-key') return (served) => ({ ...served, public_key: key.public_key, key_id: key.key_id });
      return path === '/api/checkpoint'
        ? (checkpoint) => ({ ...checkpoint, key_id: key.key_id, signature: sign(null, Buffer.from(checkpoint.note, 'utf8'), key.private_key).toString('base64') })
        : null;
    default:
      return null;
  }
}

export async function startTamperingProxy(target_url: string): Promise<TamperingProxy> {
  const target = new URL(target_url);
  const key = foreignKey();
  let tampered = 0;
  let current: Lie = 'transaction-proof';
  const server = http.createServer((request, response) => {
    const rewrite = rewriteFor(current, (request.url ?? '').split('?')[0] ?? '', key);
    const { 'if-none-match': _tag, 'if-modified-since': _since, ...headers } = { ...request.headers, host: target.host };
    if (rewrite !== null) delete headers['accept-encoding'];
    const upstream = http.request({ hostname: target.hostname, port: target.port, path: request.url, method: request.method, headers }, (answer) => {
      const { etag: _etag, 'last-modified': _modified, ...uncacheable } = { ...answer.headers, 'cache-control': 'no-store' };
      if (rewrite === null || answer.statusCode !== 200) {
        response.writeHead(answer.statusCode ?? 502, uncacheable);
        answer.pipe(response);
        return;
      }
      readBody(answer).then((body) => {
        const altered = JSON.stringify(rewrite(JSON.parse(body)));
        tampered += 1;
        const { 'content-length': _length, ...rest } = uncacheable;
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
    lie: (lie) => {
      current = lie;
    },
    foreign_key_id: key.key_id,
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
      if (bytes > BODY_BYTES_MAX) reject(new Error('body too large'));
      chunks.push(chunk);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
  });
}
