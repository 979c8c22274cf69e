/**
 * The OpenAPI document: generated from the route schemas, valid OpenAPI 3.1 by a maintained
 * validator, complete (every registered route, every error code of the catalogue, examples that
 * match their schemas), and served with the browsable reference without a token or any CDN.
 */
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/http/error-catalogue.js';
import { CONNECTION_ERROR_CODES } from '../../src/http/openapi.js';
import { startTestTabula, type TestTabula } from '../support/in-process-tabula.js';

type Media = { schema?: object; example?: unknown; examples?: Record<string, { value: unknown }> };
type Operation = {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; description?: string }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; content?: Record<string, Media>; headers?: Record<string, unknown> }>;
};
type Document = { openapi: string; info: { description: string }; paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, { type: string; scheme?: string; name?: string; in?: string }> } };

describe('OpenAPI document', () => {
  let ledger: TestTabula;
  let document: Document;

  beforeAll(async () => {
    ledger = await startTestTabula();
    const response = await ledger.app.inject({ url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    document = JSON.parse(response.body) as Document;
  });
  afterAll(async () => { await ledger.close(); });

  const operations = (): [string, string, Operation][] =>
    Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => [path, method, operation] as [string, string, Operation]));

  it('is valid OpenAPI 3.1 according to @readme/openapi-parser', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document) as never, { resolve: { external: false } });
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    // The validator is not vacuous: the same document with two operations sharing an id, or a
    // response without its description, is refused.
    const duplicate = structuredClone(document);
    (duplicate.paths['/api/stats']?.get as Operation).operationId = 'getBlock';
    expect((await validate(duplicate as never, { resolve: { external: false } })).valid).toBe(false);
    const undescribed = structuredClone(document) as unknown as { paths: Record<string, Record<string, { responses: Record<string, object> }>> };
    delete (undescribed.paths['/healthz']?.get?.responses['200'] as { description?: string }).description;
    expect((await validate(undescribed as never, { resolve: { external: false } })).valid).toBe(false);
  });

  it('describes every registered route, and nothing that is not one', () => {
    const documented = new Set(operations().map(([path, method]) => `${method.toUpperCase()} ${path}`));
    const registered = ledger.app.registeredRoutes.filter((route) => !route.hidden);
    expect(registered).toHaveLength(50); // 29 operations and the HEAD of each of the 21 GETs
    for (const route of registered) {
      const path = route.url.replace(/:([A-Za-z]+)/g, '{$1}');
      // HEAD is GET without a body (RFC 9110), which Fastify adds to every GET route by itself.
      const method = route.method === 'HEAD' ? 'GET' : route.method;
      expect(documented, `${route.method} ${route.url}`).toContain(`${method} ${path}`);
    }
    const registered_keys = new Set(registered.map((route) => `${route.method} ${route.url.replace(/:([A-Za-z]+)/g, '{$1}')}`));
    for (const key of documented) expect(registered_keys, key).toContain(key);
    expect([...documented].sort()).toEqual([
      'GET /api/accounts/{userId}/transactions', 'GET /api/balance/{userId}', 'GET /api/blocks', 'GET /api/blocks/{number}', 'GET /api/blocks/{number}/balance-root', 'GET /api/events', 'GET /api/stats', 'GET /api/transactions/{hash}',
      'GET /api/market', 'GET /api/price/quote', 'GET /api/price/history',
      'DELETE /api/webhooks/{id}', 'GET /api/transactions/{hash}/proof', 'GET /api/webhooks', 'GET /api/webhooks/{id}', 'GET /api/webhooks/{id}/deliveries', 'GET /healthz', 'GET /readyz',
      'PATCH /api/webhooks/{id}', 'POST /api/transactions/batch', 'POST /api/transactions/submit', 'POST /api/webhooks',
      'POST /api/webhooks/{id}/deliveries/{eventId}/retry', 'POST /api/webhooks/{id}/replay', 'POST /api/webhooks/{id}/rotate-secret',
      'GET /api/chain/consistency', 'GET /api/blocks/{number}/proof', 'GET /api/checkpoint', 'GET /.well-known/tabula-checkpoint-key',
    ].sort());
  });

  it('names each operation like the SDK method and describes its parameters', () => {
    const ids = operations().map(([, , operation]) => operation.operationId).sort();
    expect(ids).toEqual([
      'createWebhook', 'deleteWebhook', 'getBalance', 'getBalanceRoot', 'getBlock', 'getMarket', 'getPriceHistory', 'getPriceQuote', 'getProof', 'getStats', 'getTransaction', 'getWebhook', 'health', 'listAccountTransactions', 'listBlocks',
      'listWebhookDeliveries', 'listWebhooks', 'ready', 'replayWebhook', 'retryWebhookDelivery', 'rotateWebhookSecret', 'streamEvents', 'submitBatch', 'submitTransaction',
      'updateWebhook', 'getConsistencyProof', 'getBlockProof', 'getCheckpoint', 'getCheckpointKey',
    ].sort());
    for (const [path, , operation] of operations()) {
      expect(operation.summary, path).toBeTruthy();
      for (const name of path.match(/\{([A-Za-z]+)\}/g) ?? []) {
        const parameter = operation.parameters?.find((candidate) => `{${candidate.name}}` === name);
        expect(parameter, `${path} ${name}`).toMatchObject({ in: 'path', required: true, description: expect.any(String) });
      }
    }
    for (const [path, , operation] of operations()) {
      for (const parameter of operation.parameters ?? []) {
        const { example, examples } = parameter as { example?: unknown; examples?: object };
        expect(example ?? examples, `${path} ${parameter.name} has an example`).toBeDefined();
      }
    }
    const list = document.paths['/api/blocks']?.get;
    expect(list?.parameters?.map((parameter) => `${parameter.in}:${parameter.name}`).sort()).toEqual(['query:limit', 'query:offset']);
    const history = document.paths['/api/accounts/{userId}/transactions']?.get;
    expect(history?.parameters?.map((parameter) => `${parameter.in}:${parameter.name}`).sort()).toEqual(['path:userId', 'query:cursor', 'query:limit']);
    expect(history?.responses['200']?.content?.['application/json']?.schema).toMatchObject({ required: ['user_id', 'transactions', 'next_cursor'] });
    expect(Object.keys(history?.responses ?? {}).sort()).toEqual(['200', '400', '401', '414', '429', '500', '503']);
    expect(history?.responses['400']?.description).toContain('`invalid_pagination`');
    expect(history?.responses['400']?.description).toContain('`invalid_user_id`');
    const submit = document.paths['/api/transactions/submit']?.post;
    expect(submit?.parameters).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key' }));
    expect(submit?.requestBody?.content['application/json']?.schema).toMatchObject({ required: ['from', 'to', 'amount', 'token', 'type'] });
  });

  it('declares the bearer and X-API-Key schemes, required on /api and not on health', () => {
    expect(document.components.securitySchemes).toEqual({
      bearer_token: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }),
      api_key: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }),
    });
    for (const [path, , operation] of operations()) {
      if (path.startsWith('/api/')) expect(operation.security, path).toEqual([{ bearer_token: [], api_key: [] }, { bearer_token: [] }]);
      else expect(operation.security, path).toEqual([]);
    }
  });

  it('documents every error code of the catalogue as problem+json, with an example each', () => {
    const documented = new Map<string, Set<number>>();
    for (const [path, , operation] of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        const media = response.content?.['application/problem+json'];
        expect(media, `${path} ${status}`).toBeDefined();
        for (const [code, example] of Object.entries(media?.examples ?? {})) {
          expect(example.value, `${path} ${status} ${code}`).toMatchObject({ code, status: Number(status), type: `urn:tabula:problem:${code}` });
          expect(response.description).toContain(`\`${code}\``);
          documented.set(code, (documented.get(code) ?? new Set()).add(Number(status)));
        }
      }
    }
    for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
      if (CONNECTION_ERROR_CODES.includes(code as ErrorCode)) {
        expect(document.info.description).toContain(`${entry.status} \`${code}\``);
        continue;
      }
      expect([...(documented.get(code) ?? [])], code).toEqual([entry.status]);
    }
    const rate_limited = document.paths['/api/stats']?.get?.responses['429'];
    expect(Object.keys(rate_limited?.headers ?? {})).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit', 'RateLimit-Policy']));
    expect(Object.keys(document.paths['/api/stats']?.get?.responses['401']?.headers ?? {})).toContain('WWW-Authenticate');
  });

  it('gives every success response an example that validates against its schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    let checked = 0;
    for (const [path, method, operation] of operations()) {
      const media: [string, Media][] = Object.entries(operation.responses).flatMap(([status, response]) =>
        Object.entries(response.content ?? {}).map(([type, value]) => [`${method} ${path} ${status} ${type}`, value] as [string, Media]));
      if (operation.requestBody !== undefined) media.push(...Object.entries(operation.requestBody.content).map(([type, value]) => [`${method} ${path} body ${type}`, value] as [string, Media]));
      for (const [where, { schema, example, examples }] of media) {
        const values = example !== undefined ? [example] : Object.values(examples ?? {}).map((entry) => entry.value);
        expect(values.length, `${where} has no example`).toBeGreaterThan(0);
        const check = ajv.compile(schema as object);
        for (const value of values) {
          expect(check(value), `${where}: ${JSON.stringify(check.errors)}`).toBe(true);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });
});

describe('API reference page', () => {
  let ledger: TestTabula;
  beforeAll(async () => { ledger = await startTestTabula(); });
  afterAll(async () => { await ledger.close(); });

  it('serves the browsable reference at /docs without a token, every asset from this server', async () => {
    const page = await ledger.app.inject({ url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) {
      expect(asset, 'no CDN: every asset is served by this server').not.toMatch(/^(https?:)?\/\//);
      const url = new URL(asset, 'http://localhost/docs/').pathname;
      const response = await ledger.app.inject({ url });
      expect(response.statusCode, url).toBe(200);
    }
    const initializer = await ledger.app.inject({ url: '/docs/static/swagger-initializer.js' });
    expect(initializer.body).toContain('validatorUrl: null');
    const served = await ledger.app.inject({ url: '/docs/json' });
    const canonical = await ledger.app.inject({ url: '/openapi.json' });
    expect(JSON.parse(served.body)).toEqual(JSON.parse(canonical.body));
  });
});
