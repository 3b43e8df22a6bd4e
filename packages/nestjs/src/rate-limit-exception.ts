// The HttpException a denied request throws, so Nest's exception filters see Floodgate's 429, 503 and 401 where they see every other error.
import { HttpException, StreamableFile } from '@nestjs/common';
import { PROBLEM_CONTENT_TYPE, type Decision, type HttpResult } from '@floodgate/core/http';

/**
 * Floodgate's problem+json body as Nest's own reply path sends it: a StreamableFile (so Nest's
 * Express and Fastify adapters send it with Content-Type application/problem+json and its exact
 * Content-Length, which a plain object body cannot get: Nest resets a non-JSON type to JSON),
 * whose only enumerable fields are the problem's (type, title, status, detail, violated-policies),
 * so that a filter reading, spreading or serialising `exception.getResponse()` sees the problem.
 */
export class ProblemBody extends StreamableFile {
  [field: string]: unknown;
  constructor(text: string) {
    const bytes = Buffer.from(text);
    super(bytes, { type: PROBLEM_CONTENT_TYPE, length: bytes.length });
    for (const key of Object.keys(this)) Object.defineProperty(this, key, { enumerable: false });
    Object.assign(this, JSON.parse(text));
  }
  /** The problem fields alone: what `res.json(exception.getResponse())` in a filter sends. */
  toJSON(): Record<string, unknown> {
    return { ...this };
  }
}

/**
 * Thrown by FloodgateGuard for a request it does not admit: status 429 (limited), 503 (store
 * failed on a failMode 'closed' route) or 401 (unknown API key under unknownKey 'reject'). The
 * rate-limit headers and Retry-After are already on the response. `getResponse()` is the
 * problem details (or a `handler`'s body). Nest's default filter sends it as is; a filter of
 * yours sees it first, like any HttpException.
 */
export class RateLimitException extends HttpException {
  /** Floodgate's decision; undefined for a 401. */
  readonly decision: Decision | undefined;
  /**
   * True when the response was already written straight to Node (`respondDirectly: true`): a
   * filter must then not reply again (Nest's own checks `isHeadersSent` and only ends it).
   */
  readonly responded: boolean;
  constructor(result: HttpResult, responded = false) {
    const problem = typeof result.body === 'string' && result.contentType === PROBLEM_CONTENT_TYPE;
    super(problem ? new ProblemBody(result.body as string) : (result.body as string | Record<string, unknown>), result.status as number);
    this.decision = result.decision;
    this.responded = responded;
    const response = this.getResponse() as { detail?: unknown; title?: unknown };
    if (problem) this.message = String(response.detail ?? response.title);
  }
}
