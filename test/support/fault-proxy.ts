/**
 * A TCP proxy for fault injection, on loopback: it forwards connections to a target and can, on
 * command, cut every open connection (a database restart or a lost connection), refuse new ones, or
 * blackhole traffic — keep the sockets open but pass nothing either way, as a network partition does —
 * and then heal.
 */
import net from 'node:net';

export type FaultMode = 'forward' | 'blackhole' | 'refuse';

export class FaultProxy {
  private readonly server: net.Server;
  private readonly target: { host: string; port: number };
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private mode: FaultMode = 'forward';
  port = 0;

  private constructor(target: { host: string; port: number }) {
    this.target = target;
    this.server = net.createServer((client) => this.accept(client));
  }

  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const proxy = new FaultProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as net.AddressInfo).port;
    return proxy;
  }

  /** Forward again; blackholed connections resume passing what they held. */
  heal(): void {
    this.mode = 'forward';
    for (const { client, upstream } of this.pairs) {
      client.resume();
      upstream.resume();
    }
  }

  /** Keep every connection open but pass nothing, and hold new ones the same way. */
  blackhole(): void {
    this.mode = 'blackhole';
    for (const { client, upstream } of this.pairs) {
      client.pause();
      upstream.pause();
    }
  }

  /** Refuse new connections (close them at once). */
  refuse(): void {
    this.mode = 'refuse';
  }

  /** Reset every open connection, as a crashed or restarted server would. */
  cutAll(): number {
    const count = this.pairs.size;
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.pairs.clear();
    return count;
  }

  get connections(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    if (this.mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.target.port, this.target.host);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const drop = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.mode === 'blackhole') {
      client.pause();
      upstream.pause();
    }
  }
}
