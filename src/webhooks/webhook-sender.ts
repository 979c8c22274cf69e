/**
 * One webhook request: resolves the target through the address guard, connects to the checked
 * address only (the request's `lookup` answers with it, so no second resolution happens), POSTs the
 * event's bytes with the Standard Webhooks headers, and reads at most a few KiB of the answer. No
 * redirect is followed; a request that takes longer than the timeout is cut.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { AddressGuard, ResolvedAddress } from './address-guard.js';
import { RefusedAddressError } from './address-guard.js';
import type { AttemptOutcome } from './webhook-store.js';

/** Bytes of an answer read at the most; the rest is dropped with the connection. */
export const RESPONSE_BYTES_MAX = 4096;
/** Characters of an error message kept in an attempt. */
const ERROR_LENGTH_MAX = 300;
const USER_AGENT = 'tabula-webhooks/1';

export type SendResult = { outcome: AttemptOutcome; response_status: number | null; latency_ms: number; error: string | null };

export type WebhookRequest = { url: string; headers: Record<string, string>; body: string };

export class WebhookSender {
  private readonly guard: AddressGuard;
  private readonly timeout_ms: number;

  constructor(guard: AddressGuard, timeout_ms: number) {
    this.guard = guard;
    this.timeout_ms = timeout_ms;
  }

  /** Sends one request; never throws. `signal` cuts it short (at shutdown). */
  async send(request: WebhookRequest, signal?: AbortSignal): Promise<SendResult> {
    const started = performance.now();
    const latency = () => Math.round(performance.now() - started);
    let target: URL;
    let address: ResolvedAddress;
    try {
      target = this.guard.checkUrl(request.url);
      address = await withinTime(this.guard.resolve(target.hostname), this.timeout_ms, `${target.hostname} was not resolved within ${this.timeout_ms} ms`);
    } catch (error) {
      // A name that does not resolve, or to a refused address, is refused; one whose lookup hangs has failed.
      const outcome = error instanceof LookupTimeoutError ? 'failed' : 'refused';
      return { outcome, response_status: null, latency_ms: latency(), error: messageOf(error) };
    }
    try {
      // The timeout covers the whole attempt: what the lookup took is not given again.
      const status = await this.post(target, address, request, signal, Math.max(1, this.timeout_ms - latency()));
      return { outcome: status >= 200 && status < 300 ? 'delivered' : 'failed', response_status: status, latency_ms: latency(), error: null };
    } catch (error) {
      const outcome = error instanceof RefusedAddressError ? 'refused' : 'failed';
      return { outcome, response_status: null, latency_ms: latency(), error: messageOf(error) };
    }
  }

  private post(target: URL, address: ResolvedAddress, request: WebhookRequest, signal: AbortSignal | undefined, timeout_ms: number): Promise<number> {
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if ((options as { all?: boolean }).all === true) (callback as (error: null, addresses: object[]) => void)(null, [{ address: address.address, family: address.family }]);
      else callback(null, address.address, address.family);
    };
    const body = Buffer.from(request.body, 'utf8');
    const transport = target.protocol === 'https:' ? https : http;
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => outgoing.destroy(new Error(`no complete answer within ${this.timeout_ms} ms`)), timeout_ms);
      const outgoing = transport.request(target, {
        method: 'POST',
        lookup,
        agent: false,
        headers: { ...request.headers, 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': USER_AGENT },
        ...(signal === undefined ? {} : { signal }),
      });
      // `on`, not `once`: a request may emit more than one error (e.g. after the answer is cut), and an
      // error without a listener would crash the process.
      outgoing.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      outgoing.once('response', (response) => {
        let read = 0;
        const finish = () => {
          clearTimeout(timer);
          resolve(response.statusCode ?? 0);
          response.destroy();
        };
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= RESPONSE_BYTES_MAX) finish();
        });
        response.once('end', finish);
        response.on('error', finish);
      });
      outgoing.end(body);
    });
  }
}

class LookupTimeoutError extends Error {}

/**
 * `promise`, or a LookupTimeoutError once `timeout_ms` has passed. The system resolver cannot be
 * cancelled: a lookup that hangs goes on in the background until the resolver's own timeout.
 */
function withinTime<T>(promise: Promise<T>, timeout_ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new LookupTimeoutError(message)), timeout_ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > ERROR_LENGTH_MAX ? `${text.slice(0, ERROR_LENGTH_MAX)}…` : text;
}
