// Writes Floodgate's headers into a Fastify reply: names lower-cased once, stored where reply.header() stores them.
import type { FastifyReply } from 'fastify';

/** The description of the symbol Fastify (5.x) keeps a reply's headers under ('fastify.reply.headers'). */
export const REPLY_HEADERS_SYMBOL = 'fastify.reply.headers';
/** That symbol, found on the first reply; null when a reply has none (another Fastify): then reply.header() as before. */
let headersKey: symbol | null | undefined;

/**
 * The reply's own headers object, where `reply.header(name, value)` stores a value under its
 * lower-cased name (every name but set-cookie, which Floodgate never sends): written straight,
 * Floodgate's already lower-cased names skip Fastify's per-call toLowerCase and set-cookie check,
 * the same object and values as reply.header() leaves. Undefined where it cannot be found.
 */
export function headersOf(reply: FastifyReply): Record<string, unknown> | undefined {
  if (headersKey === undefined) headersKey = Object.getOwnPropertySymbols(reply).find((s) => s.description === REPLY_HEADERS_SYMBOL) ?? null;
  if (headersKey === null) return undefined;
  const own = (reply as unknown as Record<symbol, unknown>)[headersKey];
  return typeof own === 'object' && own !== null ? (own as Record<string, unknown>) : undefined;
}

/** Header names in lower case, each lowered once (Floodgate sends a handful of names, over and over). */
const lowered = new Map<string, string>();
export function lowerCase(name: string): string {
  let lower = lowered.get(name);
  if (lower === undefined) {
    // The key V8 interns for an object property of this name: an interned name keys Fastify's
    // headers object (and passes its toLowerCase) with no string-table lookup per response.
    lower = Object.keys({ [name.toLowerCase()]: 0 })[0];
    if (lowered.size < 64) lowered.set(name, lower);
  }
  return lower;
}

/** The names lowerCaseAt() last saw at each place of a header list, and their lower-case forms. */
const seenAt: string[] = [];
/** The first place of a direct response's names (an admission's pairs take the places below it). */
export const DIRECT_PLACES = 16;
const loweredAt: string[] = [];
/**
 * lowerCase(name) for the name at place `at` of a header list: Floodgate writes the same names in
 * the same order response after response (the same string each time), so the last name seen at that
 * place answers with a comparison instead of a Map read; another name there is looked up and kept.
 */
export function lowerCaseAt(name: string, at: number): string {
  if (seenAt[at] === name) return loweredAt[at];
  const lower = lowerCase(name);
  if (at < 32) {
    seenAt[at] = name;
    loweredAt[at] = lower;
  }
  return lower;
}

/** Whether the object has no own enumerable property (a reply's headers object with nothing set). */
export function isEmpty(object: Record<string, unknown>): boolean {
  for (const name in object) if (Object.hasOwn(object, name)) return false;
  return true;
}
