/**
 * `POST /dev/token`: mints a development token for the explorer's sign-in page. It is registered only
 * when the service runs with the development secret (no JWT configuration, NODE_ENV not production),
 * and answers only callers on this machine (loopback) whose request no proxy relayed, since anyone who
 * can reach it can be an admin.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DevTokenSigner } from '../../auth/dev-token-signer.js';
import { parseUserId } from '../../domain/user-id.js';
import { DevTokenBodySchema, DevTokenSchema, ProblemSchema } from '../schemas.js';

export const devTokenRoutes: FastifyPluginAsyncTypebox<{ signer: DevTokenSigner }> = async (app, { signer }) => {
  app.post('/dev/token', {
    schema: {
      summary: 'Mint a development token (development secret only, loopback callers only)',
      hide: true,
      body: DevTokenBodySchema,
      response: { 200: DevTokenSchema, '4xx': ProblemSchema },
    },
    // Before the body is read: a remote caller learns nothing, not even that the route exists.
    onRequest: async (request, reply) => {
      if (isLoopback(request.ip) && !isForwarded(request.headers)) return;
      reply.callNotFound();
      return reply;
    },
  }, async (request, reply) => {
    const sub = parseUserId(request.body.sub, 'sub');
    const token = await signer.sign(sub, { admin: request.body.admin ?? false });
    reply.header('cache-control', 'no-store');
    return { token, token_type: 'Bearer' as const, expires_in: signer.ttl_s };
  });
};

/**
 * Whether a proxy relayed the request: behind a reverse proxy on this machine every caller is
 * loopback, so a forwarded request is never taken for a local one.
 */
function isForwarded(headers: Record<string, unknown>): boolean {
  return headers.forwarded !== undefined || headers['x-forwarded-for'] !== undefined || headers['x-real-ip'] !== undefined;
}

export function isLoopback(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(address);
}
