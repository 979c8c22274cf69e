/** Typed errors from inside → problem+json at the edge (Hono style). The only place that picks statuses. */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { BudgetExceededError, ConflictError, ForbiddenError, GoneError, InvalidRequestError, NotFoundError, OverloadedError, type FieldError } from '../domain/shared/errors.js';
import { AuthError } from '../auth/auth-error.js';
import { ERROR_CATALOGUE, isErrorCode, type ErrorCode } from './error-catalogue.js';
import { HttpProblem, problem, PROBLEM_CONTENT_TYPE } from './problem.js';

const REALM = 'Bearer realm="ledger"';

export function toHttpProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof AuthError) return authProblem(error);
  if (error instanceof InvalidRequestError && isErrorCode(error.code)) {
    const errors = error.field === undefined ? undefined : [{ field: error.field, message: error.message }];
    return new HttpProblem(error.code, error.message, {}, errors);
  }
  if (error instanceof BudgetExceededError) {
    return new HttpProblem(error.code, error.message, { 'retry-after': String(error.retry_after_s) });
  }
  if (error instanceof OverloadedError && isErrorCode(error.code)) {
    return new HttpProblem(error.code, error.message, { 'retry-after': String(error.retry_after_s) });
  }
  if ((error instanceof ForbiddenError || error instanceof NotFoundError || error instanceof ConflictError || error instanceof GoneError) && isErrorCode(error.code)) {
    return new HttpProblem(error.code, error.message);
  }
  return frameworkProblem(error as FastifyError);
}

function authProblem(error: AuthError): HttpProblem {
  if (error.code === 'identity_provider_unavailable') return new HttpProblem(error.code, error.message, { 'retry-after': '5' });
  if (error.code === 'missing_token') return new HttpProblem(error.code, error.message, { 'www-authenticate': REALM });
  if (error.code === 'invalid_api_key') return new HttpProblem(error.code, error.message, { 'www-authenticate': 'ApiKey realm="ledger"' });
  const description = error.message.replace(/["\\]/g, "'");
  return new HttpProblem(error.code, error.message, {
    'www-authenticate': `${REALM}, error="invalid_token", error_description="${description}"`,
  });
}

/** Errors raised by Fastify itself while parsing and validating the request. */
function frameworkProblem(error: FastifyError): HttpProblem {
  if (Array.isArray(error.validation)) {
    const errors: FieldError[] = error.validation.map((item) => ({
      field: fieldOf(item.instancePath, item.params, error.validationContext),
      message: item.message ?? 'is not valid',
    }));
    return new HttpProblem('validation_failed', `the request ${error.validationContext ?? 'input'} is not valid`, {}, errors);
  }
  const code = FRAMEWORK_CODES[error.code ?? ''];
  if (code !== undefined) return new HttpProblem(code, error.message);
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON|prototype/i.test(error.message))) {
    return new HttpProblem('malformed_json', 'the body is not valid JSON');
  }
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return new HttpProblem(error.statusCode === 404 ? 'route_not_found' : 'validation_failed', error.message);
  }
  return new HttpProblem('internal_error', 'an unexpected error occurred');
}

const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation_failed',
  FST_ERR_BAD_URL: 'invalid_url',
  FST_ERR_MAX_PARAM_LENGTH: 'uri_too_long',
};

function fieldOf(instance_path: string, params: Record<string, unknown>, context: string | undefined): string {
  const extra = params.missingProperty ?? params.additionalProperty;
  const path = instance_path.replace(/^\//, '').replaceAll('/', '.');
  const field = [path, typeof extra === 'string' ? extra : ''].filter((part) => part !== '').join('.');
  return field === '' ? (context ?? 'body') : field;
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const mapped = toHttpProblem(error);
  // A bug is an error with its stack; a refusal the service means (overloaded, storage or identity
  // provider away: a 503 with its code) is one warn line, not a stack trace per refused request while
  // the pressure lasts (its component logs the cause at most once a minute, and counts it).
  if (mapped.code === 'internal_error') request.log.error({ err: error }, 'request failed');
  else if (mapped.status >= 500) request.log.warn({ method: request.method, url: request.url, status: mapped.status, code: mapped.code, detail: mapped.message }, 'request refused');
  const body = problem(mapped.code, mapped.status >= 500 && mapped.code === 'internal_error' ? 'an unexpected error occurred' : mapped.message, mapped.errors);
  return reply.code(mapped.status).headers(mapped.headers).type(PROBLEM_CONTENT_TYPE).send(body);
}

/**
 * Errors Node's HTTP parser raises before there is a request (bad framing, oversized headers, a
 * request that never finishes): answered as problem+json too, then the connection is closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode = error.code === 'HPE_HEADER_OVERFLOW'
    ? 'headers_too_large'
    : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'malformed_request';
  answerOnSocket(socket, code, ERROR_DETAILS[code] ?? 'the request could not be read');
}

/** The longest part of a request's target repeated in an answer's detail. */
const TARGET_SHOWN_MAX = 200;

/**
 * `CONNECT`: Node hands the socket over instead of routing the request (without a listener it closes
 * the connection with no answer at all). No route of ours tunnels, so it gets the unknown route's answer.
 */
export function connectHandler(request: IncomingMessage, socket: Duplex): void {
  answerOnSocket(socket, 'route_not_found', `no route for CONNECT ${(request.url ?? '').slice(0, TARGET_SHOWN_MAX)}`);
}

/**
 * An `Expect` other than `100-continue` (which Node answers itself): without a listener Node answers
 * 417 with no body. The body that may follow is not read, so the connection is closed after the answer.
 */
export function expectationHandler(request: IncomingMessage, response: ServerResponse): void {
  const expectation = String(request.headers.expect ?? '').slice(0, TARGET_SHOWN_MAX);
  const body = JSON.stringify(problem('expectation_failed', `Expect: ${expectation} is not supported; only 100-continue is`));
  response.writeHead(ERROR_CATALOGUE.expectation_failed.status, {
    'content-type': PROBLEM_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), 'x-content-type-options': 'nosniff', connection: 'close',
  });
  response.end(body);
}

/** Writes a problem+json answer straight onto a connection that has no request to route, then closes it. */
function answerOnSocket(socket: Duplex, code: ErrorCode, detail: string): void {
  const body = JSON.stringify(problem(code, detail));
  if (socket.writable) {
    const status = ERROR_CATALOGUE[code].status;
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

const ERROR_DETAILS: Partial<Record<ErrorCode, string>> = {
  headers_too_large: 'the request headers are larger than the server accepts',
  request_timeout: 'the request was not received in time',
  malformed_request: 'the HTTP request is malformed',
};
