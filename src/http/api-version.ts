/**
 * Versions of the HTTP interface. The unversioned paths (`/api/...`) are version 1, and `/api/v1/...`
 * is the same route under its versioned name. Every `/api` answer names the version it speaks
 * (`API-Version`), and a route that is being retired says so with `Deprecation` (RFC 9745) and
 * `Sunset` (RFC 8594) before it goes away. The policy is in docs/api.md ("Versions").
 */
import type { FastifyReply } from 'fastify';

/** The major version of the interface; the OpenAPI document's `info.version` starts with it. */
export const API_MAJOR_VERSION = 1;
export const API_VERSION_HEADER = 'API-Version';

const API_PREFIX = '/api/';
const VERSIONED_PREFIX = `/api/v${API_MAJOR_VERSION}/`;

/** A route being retired: from when (unix seconds) it is deprecated, and when it will stop answering. */
export type Deprecation = { deprecated_at_s: number; sunset_at_s: number; successor_path?: string };

/** Deprecated routes by method and route path (e.g. `GET /api/blocks`); none today. */
export type DeprecationTable = ReadonlyMap<string, Deprecation>;

export const NO_DEPRECATIONS: DeprecationTable = new Map();

/**
 * The URL to route: `/api/v1/x` is served by the route of `/api/x`. Called by Fastify's `rewriteUrl`
 * before routing; `request.originalUrl` keeps what the client sent.
 */
export function routedUrl(url: string): string {
  return url.startsWith(VERSIONED_PREFIX) ? API_PREFIX + url.slice(VERSIONED_PREFIX.length) : url;
}

/** The headers of an `/api` answer: its version, and the deprecation of its route when it has one. */
export function setVersionHeaders(reply: FastifyReply, route_key: string, deprecations: DeprecationTable): void {
  reply.header(API_VERSION_HEADER, String(API_MAJOR_VERSION));
  const deprecation = deprecations.get(route_key);
  if (deprecation === undefined) return;
  reply.header('Deprecation', `@${deprecation.deprecated_at_s}`);
  reply.header('Sunset', new Date(deprecation.sunset_at_s * 1000).toUTCString());
  if (deprecation.successor_path !== undefined) reply.header('Link', `<${deprecation.successor_path}>; rel="successor-version"`);
}
