// Identity options: parsed once, at construction, into ResolvedIdentityOptions (each option one check, one message).
import { parseDuration } from '../base/duration';
import { invalidOption } from '../base/errors';
import { checkOptionNames, clockOption, loggerOption, oneOf, optionNames, optionsObject, wholeNumber } from '../base/validate';
import type { IdentityOptions, ResolvedIdentityOptions } from './types';
import { resolveWarnings } from '../base/warnings';

const DEFAULT_HEADERS = ['authorization', 'x-api-key'];
// RFC 9110 token characters: what a header name may contain.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;

/** The names of every identity option. */
export const IDENTITY_OPTION_NAMES = optionNames<IdentityOptions>()([
  'apiKeyHeaders',
  'ipv6Subnet',
  'maxApiKeyLength',
  'resolveKey',
  'unverifiedKeys',
  'unknownKey',
  'keyCache',
  'resolveTimeoutMs',
  'logger',
  'warnings',
  'clock',
]);
const KEY_CACHE_OPTION_NAMES = optionNames<NonNullable<IdentityOptions['keyCache']>>()([
  'max',
  'unknownMax',
  'ttlMs',
  'unknownTtlMs',
  'lookupsPerIp',
  'lookupWindowMs',
  'maxInFlight',
]);

/**
 * Parses identity options once, at construction; throws FG_INVALID_OPTION naming the bad one, or
 * FG_UNKNOWN_OPTION for a name it does not know (`checkNames: false` when the caller checked them).
 */
export function resolveIdentityOptions(options: IdentityOptions = {}, checkNames = true): ResolvedIdentityOptions {
  if (!options || typeof options !== 'object') invalidOption('identity options', options, 'an object');
  if (checkNames) checkOptionNames('identity options', options, IDENTITY_OPTION_NAMES);
  const rawHeaders = options.apiKeyHeaders ?? DEFAULT_HEADERS;
  let headers: string[] = [];
  if (rawHeaders !== false) {
    if (!Array.isArray(rawHeaders) || rawHeaders.length > 16) {
      invalidOption('apiKeyHeaders', rawHeaders, 'false or an array of up to 16 header names');
    }
    headers = rawHeaders.map((name, i) => {
      if (typeof name !== 'string' || !HEADER_NAME.test(name)) {
        invalidOption(`apiKeyHeaders[${i}]`, name, 'a header name (RFC 9110 token characters, 1 to 64)');
      }
      // Adapters hand over Node's headers, whose names are lower case. Interned (V8 keeps one copy of
      // a property key): each request reads the headers object by these names without a string-table lookup.
      return Object.keys({ [name.toLowerCase()]: 0 })[0];
    });
  }
  const resolveKey = options.resolveKey;
  if (resolveKey !== undefined && typeof resolveKey !== 'function') {
    invalidOption('resolveKey', resolveKey, 'a function (apiKey) => { account, limits? } | null, or a promise of it');
  }
  const unknownKey = oneOf('unknownKey', options.unknownKey, ['ip', 'reject'], 'ip');
  if (options.unknownKey !== undefined && resolveKey === undefined) {
    // Without a lookup no key is ever unknown: the setting would silently do nothing.
    invalidOption('unknownKey', options.unknownKey, 'to be set only together with `resolveKey`');
  }
  if (options.unverifiedKeys !== undefined && resolveKey !== undefined) {
    // With a lookup every key is verified: the setting would silently do nothing.
    invalidOption('unverifiedKeys', options.unverifiedKeys, 'to be set only without `resolveKey` (keys it answers are verified)');
  }
  const trustedHeader = trustedHeaderOf(options.unverifiedKeys, headers);
  const cache = optionsObject('keyCache', options.keyCache, 'an object { max?, unknownMax?, ttlMs?, unknownTtlMs?, lookupsPerIp?, lookupWindowMs?, maxInFlight? }');
  checkOptionNames('keyCache', cache, KEY_CACHE_OPTION_NAMES);
  const logger = loggerOption('logger', options.logger);
  const warnings = resolveWarnings(options.warnings);
  const clock = clockOption('clock', options.clock) ?? (() => performance.now());
  return {
    headers,
    ipv6Subnet: wholeNumber('ipv6Subnet', options.ipv6Subnet ?? 64, 1, 128),
    maxApiKeyLength: wholeNumber('maxApiKeyLength', options.maxApiKeyLength ?? 4096, 1, 16_384),
    resolveKey,
    unknownKey,
    unverifiedKeys: trustedHeader === undefined ? 'ip' : 'trust',
    trustedHeader,
    cacheMax: wholeNumber('keyCache.max', cache.max ?? 10_000, 1, 10_000_000),
    unknownMax: wholeNumber('keyCache.unknownMax', cache.unknownMax ?? 10_000, 1, 10_000_000),
    ttlMs: parseDuration('keyCache.ttlMs', cache.ttlMs ?? 60_000, 1, 86_400_000),
    unknownTtlMs: parseDuration('keyCache.unknownTtlMs', cache.unknownTtlMs ?? 10_000, 1, 86_400_000),
    lookupsPerIp: wholeNumber('keyCache.lookupsPerIp', cache.lookupsPerIp ?? 10, 0, 1_000_000),
    lookupWindowMs: parseDuration('keyCache.lookupWindowMs', cache.lookupWindowMs ?? 60_000, 1, 86_400_000),
    maxInFlight: wholeNumber('keyCache.maxInFlight', cache.maxInFlight ?? 1_000, 1, 1_000_000),
    timeoutMs: parseDuration('resolveTimeoutMs', options.resolveTimeoutMs ?? 1_000, 1, 60_000),
    logger,
    warnings,
    clock,
  };
}

/**
 * The one header `unverifiedKeys` trusts, lower case; undefined for 'ip' (the default). A request
 * can carry several key headers, and the client writes every one the gateway does not check: trust
 * must name the one the gateway verified, or an invented key in another header would be a fresh
 * bucket. The bare 'trust' is accepted where it is unambiguous (one key header).
 */
function trustedHeaderOf(raw: unknown, headers: readonly string[]): string | undefined {
  if (raw === undefined || raw === 'ip') return undefined;
  const listed = headers.length > 0 ? headers.join(', ') : 'none: apiKeyHeaders is false';
  if (raw === 'trust') {
    if (headers.length === 1) return headers[0];
    if (headers.length === 0) invalidOption('unverifiedKeys', raw, "'ip' or nothing: apiKeyHeaders is false, so no header carries a key to trust");
    const example = headers.includes('x-api-key') ? 'x-api-key' : (headers[0] ?? 'x-api-key');
    invalidOption(
      'unverifiedKeys',
      raw,
      `'ip', or { trust: '<header>' } naming the one header your gateway verifies (e.g. { trust: '${example}' }): 'trust' alone is ambiguous with several apiKeyHeaders (${listed}), since a client could add an invented key in another of them`,
    );
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    invalidOption('unverifiedKeys', raw, `'ip', or { trust: '<header>' } naming one of apiKeyHeaders (${listed})`);
  }
  checkOptionNames('unverifiedKeys', raw, ['trust']);
  const header = (raw as { trust?: unknown }).trust;
  if (typeof header !== 'string' || !headers.includes(header.toLowerCase())) {
    invalidOption('unverifiedKeys.trust', header, `one of apiKeyHeaders (${listed})`);
  }
  return header.toLowerCase();
}
