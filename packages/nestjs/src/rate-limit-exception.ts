// The HttpException a denied request throws, so Nest's exception filters see Floodgate's 429, 503 and 401 where they see every other error.
import { HttpException, StreamableFile } from '@nestjs/common';
import { PROBLEM_CONTENT_TYPE, type Decision, type HttpResult } from '@floodgate/core/http';

/** A default body, parsed once: its problem fields and its bytes. */
interface Rendered {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly bytes: Buffer;
}

/**
 * Default bodies already parsed, by their text: the core renders each distinct body once (a flood
 * of 429s says a few things, many times), so a denial costs neither a JSON.parse nor a Buffer.
 * Bounded: cleared past RENDERED_MAX distinct texts.
 */
const rendered = new Map<string, Rendered>();
const RENDERED_MAX = 1000;

function renderedOf(text: string): Rendered {
  let hit = rendered.get(text);
  if (hit === undefined) {
    if (rendered.size >= RENDERED_MAX) rendered.clear();
    rendered.set(text, (hit = { fields: JSON.parse(text) as Record<string, unknown>, bytes: Buffer.from(text) }));
  }
  return hit;
}

/**
 * Floodgate's problem+json body as Nest's own reply path sends it: a StreamableFile (so Nest's
 * Express adapter sends it with Content-Type application/problem+json and its exact
 * Content-Length, which a plain object body cannot get: Nest resets a non-JSON type to JSON),
 * whose only enumerable fields are the problem's (type, title, status, detail, violated-policies),
 * so that a filter reading, spreading or serialising `exception.getResponse()` sees the problem.
 */
export class ProblemBody extends StreamableFile {
  [field: string]: unknown;
  constructor(text: string) {
    const { fields, bytes } = renderedOf(text);
    super(bytes, { type: PROBLEM_CONTENT_TYPE, length: bytes.length });
    for (const key of Object.keys(this)) Object.defineProperty(this, key, { enumerable: false });
    Object.assign(this, fields);
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
 * yours sees it first, like any HttpException. The guard makes it without a stack trace (its
 * `stack` is its first line): a denial is an answer, not a fault, and under a flood of them
 * capturing Nest's call stack was most of what a 429 cost.
 */
export class RateLimitException extends HttpException {
  /** Floodgate's decision; undefined for a 401. */
  readonly decision: Decision | undefined;
  /**
   * True when the response was already written straight to Node (`respondDirectly: true`): a
   * filter must then not reply again (Nest's own checks `isHeadersSent` and only ends it).
   */
  readonly responded: boolean;
  /**
   * `plain`: the default body as a plain object of the problem's fields rather than a ProblemBody
   * stream (the guard on Nest's Fastify platform, which has put Content-Type application/problem+json
   * on the reply itself: Nest's Fastify adapter keeps a type set on the reply for a body without a
   * `statusCode`, and sends a plain object in one write, where a stream costs several).
   */
  constructor(result: HttpResult, responded = false, plain = false) {
    const problem = typeof result.body === 'string' && result.contentType === PROBLEM_CONTENT_TYPE;
    const body = problem ? (plain ? { ...renderedOf(result.body as string).fields } : new ProblemBody(result.body as string)) : result.body;
    super(body as string | Record<string, unknown>, result.status as number);
    this.decision = result.decision;
    this.responded = responded;
    const response = this.getResponse() as { detail?: unknown; title?: unknown };
    if (problem) this.message = String(response.detail ?? response.title);
  }
}
