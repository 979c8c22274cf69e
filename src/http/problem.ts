/** RFC 9457 problem details: the body of every error response. */
import { STATUS_CODES } from 'node:http';
import type { FieldError } from '../domain/shared/errors.js';
import { ERROR_CATALOGUE, type ErrorCode } from './error-catalogue.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
};

/** An error already in HTTP terms, thrown by the edge (auth, parameters) and sent as is. */
export class HttpProblem extends Error {
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;
  readonly errors: FieldError[] | undefined;
  constructor(code: ErrorCode, detail: string, headers: Record<string, string> = {}, errors?: FieldError[]) {
    super(detail);
    this.name = 'HttpProblem';
    this.code = code;
    this.headers = headers;
    this.errors = errors;
  }

  get status(): number {
    return ERROR_CATALOGUE[this.code].status;
  }
}

export function problem(code: ErrorCode, detail: string, errors?: FieldError[]): Problem {
  const status = ERROR_CATALOGUE[code].status;
  const body: Problem = { type: `urn:tabula:problem:${code}`, title: STATUS_CODES[status] ?? 'Error', status, detail, code };
  if (errors !== undefined) body.errors = errors;
  return body;
}
