// pacedFetch(fetch, options): a fetch that waits before the limit and honours Retry-After, for code that only has fetch.
import { resolveCallOptions, type CallPacingOptions, type PacingOptions } from './options';
import { readBounded } from './body/read-bounded';
import { pacerFrom, type Pacer } from './pacer/pacer';
import { isProblemJson, parseProblemDetails, parseRateLimit, type ProblemInfo } from './parse';

/** fetch's own signature, whichever fetch is wrapped (Node's global, undici's, a test double). */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** fetch's init, plus this call's pacing options. */
export type PacedRequestInit = RequestInit & { pacing?: CallPacingOptions };

export type PacedFetch = ((input: string | URL | Request, init?: PacedRequestInit) => Promise<Response>) & {
  /** The state this fetch keeps (share it: `pacedFetch(other, paced.pacer)`). */
  readonly pacer: Pacer;
};

/** A body fetch can send again for a retry: anything but a stream, which is read once. */
function replayable(body: RequestInit['body'] | undefined): boolean {
  return body === undefined || body === null || !(typeof (body as ReadableStream).getReader === 'function' || Symbol.asyncIterator in Object(body));
}

/**
 * The problem details of a 429 or 503 `application/problem+json`, read from a copy of the body up to
 * `problemBodyMaxBytes` and `problemBodyTimeoutMs`. Past either the copy is cancelled and the answer
 * is taken without them (the response itself is the caller's, untouched, or cancelled for a retry).
 */
async function problemOf(pacer: Pacer, response: Response): Promise<ProblemInfo | undefined> {
  const { problemBodyMaxBytes, problemBodyTimeoutMs } = pacer.options;
  if (!isProblemJson(response.headers.get('content-type') ?? undefined) || !response.body || problemBodyMaxBytes === 0) return undefined;
  // A length announced past the bound: not worth starting.
  if (Number(response.headers.get('content-length') ?? 0) > problemBodyMaxBytes) return undefined;
  let copy: Response;
  try {
    copy = response.clone();
  } catch {
    return undefined;
  }
  const read = await readBounded(copy.body!, problemBodyMaxBytes, problemBodyTimeoutMs);
  return 'text' in read ? parseProblemDetails(read.text) : undefined;
}

/**
 * Wraps a fetch so that every call waits, before it is sent, for the quota its scope has left, and a
 * 429 or 503 with Retry-After is retried after that wait for the methods that may be (see
 * PacingOptions). The response is fetch's own; a call that would wait past `maxWaitMs` rejects with
 * RateLimitWaitError, an aborted `signal` rejects with its reason (waits included), and a call whose
 * retries are spent resolves with the last 429 or 503, as fetch would.
 *
 * `options` are checked here, once; pass a Pacer instead to share state with other wrappers.
 */
export function pacedFetch(fetchImpl: FetchLike = globalThis.fetch, options: PacingOptions | Pacer = {}): PacedFetch {
  if (typeof fetchImpl !== 'function') {
    throw new TypeError(`pacedFetch: the first argument must be a fetch function, got ${fetchImpl === null ? 'null' : typeof fetchImpl}`);
  }
  const pacer = pacerFrom(options);
  const paced = async (input: string | URL | Request, init?: PacedRequestInit): Promise<Response> => {
    let fetchInit: RequestInit | undefined = init;
    let call: CallPacingOptions = {};
    if (init && 'pacing' in init) {
      const { pacing, ...rest } = init;
      call = resolveCallOptions(pacing);
      fetchInit = rest;
    }
    const isRequest = typeof Request !== 'undefined' && input instanceof Request;
    // A relative URL is the page's to resolve (fetch in a browser takes one): against its location.
    const base = (globalThis as { location?: { href?: string } }).location?.href;
    const url = new URL(isRequest ? (input as Request).url : String(input), base);
    const method = (fetchInit?.method ?? (isRequest ? (input as Request).method : 'GET')).toUpperCase();
    const signal = fetchInit?.signal ?? (isRequest ? (input as Request).signal : undefined) ?? undefined;
    const scope = pacer.scopeOf(url);
    const budget = pacer.budget(call.maxWaitMs, signal);
    const retryAllowed = call.retry !== false && replayable(fetchInit?.body) && !(isRequest && (input as Request).bodyUsed);
    for (let attempt = 0; ; attempt++) {
      const ticket = await pacer.acquire(scope, budget);
      let response: Response;
      try {
        // A Request's body is read by the first send: each attempt that may be retried sends a copy.
        const sent = isRequest && retryAllowed && attempt < pacer.options.maxRetries ? (input as Request).clone() : input;
        response = await fetchImpl(sent, fetchInit);
      } catch (error) {
        pacer.release(ticket);
        throw error;
      }
      const info = parseRateLimit(response.headers);
      const problem = pacer.options.retryStatuses.has(response.status) ? await problemOf(pacer, response) : undefined;
      const retry = pacer.settle(ticket, { status: response.status, method, headers: response.headers, problem, attempt, retryAllowed }, info);
      if (!retry) return response;
      // The refused response is not the caller's: drop its body so the connection can be reused.
      await response.body?.cancel().catch(() => undefined);
    }
  };
  return Object.assign(paced, { pacer });
}
