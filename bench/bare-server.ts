/**
 * The ceiling: a bare Fastify server on the same machine, answering `/bare/<bytes>` (GET or POST,
 * the JSON body parsed as usual) with a JSON body of exactly that many bytes and the given status.
 * Started by the benchmark as a process of its own; prints its port on stdout once listening.
 */
import Fastify from 'fastify';

const BODY_BYTES_MAX = 2 * 1024 * 1024;
const bodies = new Map<number, string>();

function bodyOf(bytes: number): string {
  let body = bodies.get(bytes);
  if (body === undefined) {
    // {"pad":"xxx…"} is 10 bytes of framing around the padding.
    body = JSON.stringify({ pad: 'x'.repeat(Math.max(0, bytes - 10)) });
    bodies.set(bytes, body);
  }
  return body;
}

const app = Fastify({ logger: false, bodyLimit: BODY_BYTES_MAX });
app.route({
  method: ['GET', 'POST'],
  url: '/bare/:status/:bytes',
  handler: async (request, reply) => {
    const { status, bytes } = request.params as { status: string; bytes: string };
    return reply.code(Number(status)).type('application/json; charset=utf-8').send(bodyOf(Number(bytes)));
  },
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${new URL(address).port}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
