// Step: the extra keys of an admitted request, one after another: all admit, or the ones charged are given back and the denial answers; a key the request makes malformed answers 400.
import type { Decision } from '../model/decision';
import { utf8Length } from '../base/utf8';
import { PROBLEM_CONTENT_TYPE } from '../headers/problem-details';
import { refundAll, countOnlyVerdictOf } from './charges';
import { finishing, respond } from './responses';
import type { Charge, HttpResult, Identified } from './types';

/** Longest extra key, in characters: an account name or an email is far shorter; a longer one is a 400. */
export const MAX_EXTRA_KEY_LENGTH = 1024;

/** What a key function's answer is: a subject, nothing (skip the key: no account named), or malformed (400). */
const MALFORMED = Symbol('malformed');

/**
 * The subject an extra key's answer names. `undefined` and '' name nobody (no username sent: the
 * key is skipped). A string up to MAX_EXTRA_KEY_LENGTH, or a finite number (42 and '42' are one
 * account), is the subject. Anything else is what a client made of a body field (an array, an
 * object, null, a boolean, a very long string): never a skip, since the handler may still read it
 * as the account (`String(['victim'])` is 'victim'), and never a key of its own, since each shape
 * (`['victim']`, `[['victim']]`) would be a fresh budget for that account. It is MALFORMED: 400.
 */
export function extraKeySubject(raw: unknown): string | undefined | typeof MALFORMED {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw === 'string') return raw.length <= MAX_EXTRA_KEY_LENGTH ? raw : MALFORMED;
  if (typeof raw === 'number' && Number.isFinite(raw)) return String(raw);
  return MALFORMED;
}

/**
 * The 400 for a malformed extra key. The request stays counted against the keys already checked
 * (its IP first), as a 401 for an unknown API key is, so malformed requests are limited like any
 * other; under `countOnly` the outcome (a 400) decides, as it would for the handler's own 400.
 */
function badRequest<Req>(ctx: Identified<Req>, main: Decision, charges: Charge[], name: string): HttpResult {
  void main.lease?.release(); // the handler does not run: no in-flight slot
  if (ctx.pipe.o.countOnly) countOnlyVerdictOf(ctx, charges)(400);
  const body = JSON.stringify({
    type: 'about:blank',
    title: 'Bad Request',
    status: 400,
    detail: `The request's ${name} must be a string of up to ${MAX_EXTRA_KEY_LENGTH} characters or a number.`,
  });
  const direct = ctx.pipe.o.respondDirectly ? ['Content-Type', PROBLEM_CONTENT_TYPE, 'Content-Length', String(utf8Length(body))] : undefined;
  return { decision: undefined, status: 400, headers: [], body, contentType: PROBLEM_CONTENT_TYPE, direct };
}

/**
 * Counts the request against each extra key, each only once the ones before admitted. Sequential
 * on purpose: a parallel check would charge keys a denial then has to give back, and other
 * requests would see those units. A failing key function gives every charge back and rejects.
 * With `countOnly`, the answer carries the settle function that decides whether the charges stay.
 * A key function whose answer is malformed (see `extraKeySubject`) answers 400.
 */
export async function checkExtraKeys<Req>(ctx: Identified<Req>, main: Decision, charges: Charge[]): Promise<HttpResult> {
  const { pipe, request, cost } = ctx;
  try {
    for (const extra of pipe.extras) {
      const raw: unknown = await extra.key(request);
      const value = extraKeySubject(raw);
      if (value === undefined) continue;
      if (value === MALFORMED) return badRequest(ctx, main, charges, extra.name);
      const subject = `${extra.name}:${value}`;
      const scope = `${ctx.scope}#${extra.name}`;
      extra.claim(scope);
      const decision = await extra.limiter.consume(subject, { cost, scope });
      if (decision.at !== undefined) charges.push({ limiter: extra.limiter, subject, scope, at: decision.at, name: extra.name });
      if (!decision.allowed) {
        refundAll(charges, cost);
        void main.lease?.release();
        return respond(ctx, decision);
      }
    }
  } catch (error) {
    refundAll(charges, cost); // a failing key function must not leave units charged
    void main.lease?.release();
    throw error;
  }
  const result = await respond(ctx, main);
  if (!pipe.o.countOnly || charges.length === 0) return result;
  // countOnly's verdict, and the in-flight slot's release (respond's finish hook) when the request holds one.
  const counting = countOnlyVerdictOf(ctx, charges);
  const releasing = result.finish;
  return { ...result, ...finishing(releasing ? (status) => (counting(status), releasing(status)) : counting) };
}
