/**
 * The explorer: the web page built from explorer/ into static files, served at `/` with no
 * authentication (the page itself signs in and calls `/api` with the user's token). Only the files
 * that exist when the server starts get routes; anything else falls through to the 404 problem.
 */
import fastifyStatic, { type SetHeadersResponse } from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ExplorerConfigSchema } from '../schemas.js';

export type ExplorerOptions = {
  /** The folder holding the built explorer (its index.html and assets/). */
  root: string;
  native_symbol: string;
  /** Whether `POST /dev/token` exists on this server. */
  dev_tokens: boolean;
};

/** Scripts, styles and API calls only from this origin; the page may not be framed. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const ASSET_MAX_AGE_S = 365 * 24 * 3600;

export const explorerRoutes: FastifyPluginAsyncTypebox<ExplorerOptions> = async (app, options) => {
  await app.register(fastifyStatic, {
    root: options.root,
    prefix: '/',
    wildcard: false,
    index: 'index.html',
    cacheControl: false,
    serveDotFiles: false,
    setHeaders: setStaticHeaders,
  });

  app.get('/explorer-config.json', {
    schema: { summary: "The explorer's settings: the native token's symbol and whether development tokens exist", hide: true, response: { 200: ExplorerConfigSchema } },
  }, async (_request, reply) => {
    reply.header('cache-control', 'no-cache');
    return { native_symbol: options.native_symbol, dev_tokens: options.dev_tokens };
  });
};

/** Hashed assets never change; the page itself is revalidated so a new build is picked up. */
function setStaticHeaders(response: SetHeadersResponse, file_path: string): void {
  response.setHeader('x-content-type-options', 'nosniff');
  response.setHeader('referrer-policy', 'no-referrer');
  if (file_path.endsWith('.html')) {
    response.setHeader('cache-control', 'no-cache');
    response.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
  } else if (/[\\/]assets[\\/]/.test(file_path)) {
    response.setHeader('cache-control', `public, max-age=${ASSET_MAX_AGE_S}, immutable`);
  } else {
    response.setHeader('cache-control', 'no-cache');
  }
}
