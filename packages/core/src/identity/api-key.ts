// Finds the API key a request carries (Authorization: Bearer or a key header) and names it by its digest.
import { sha256Base64url } from '../base/digest';

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** What the headers say about an API key. */
export type ApiKeyFinding =
  | { readonly found: false }
  /** A key longer than allowed: not a key anyone was issued, so it is known unknown without a lookup. */
  | { readonly found: true; readonly tooLong: true; readonly digest: string }
  | { readonly found: true; readonly tooLong: false; readonly digest: string; readonly key: string };

// RFC 7235 auth-scheme is case-insensitive; one or more spaces, then the credentials with no inner space.
const BEARER = /^[ \t]*bearer[ \t]+([^ \t]+)[ \t]*$/i;

function first(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' ? v : undefined;
}

/**
 * A fixed-length name for a key (SHA-256, base64url, 43 characters). The bucket and the lookup
 * cache are keyed on it, so a 10 KB key costs no more memory than a short one, and the raw key is
 * never kept beyond the lookup.
 */
export function digestKey(key: string): string {
  return sha256Base64url(key);
}

const NOT_FOUND: ApiKeyFinding = Object.freeze({ found: false });

/**
 * The first header in `names` that carries a key. For `authorization` only the Bearer scheme
 * counts (Basic and others are credentials, not API keys); other headers count when not blank.
 */
export function findApiKey(headers: Headers | undefined, names: readonly string[], maxLength: number): ApiKeyFinding {
  if (!headers || typeof headers !== 'object') return NOT_FOUND;
  for (const name of names) {
    const value = first(headers[name]);
    if (value === undefined) continue;
    let key: string | undefined;
    if (name === 'authorization') {
      // Anchored, no nested quantifiers: linear in the header's length (Node caps headers at 16 KB).
      key = BEARER.exec(value)?.[1];
    } else {
      key = value.trim() || undefined;
    }
    if (key === undefined) continue;
    if (key.length > maxLength) return { found: true, tooLong: true, digest: digestKey(key) };
    return { found: true, tooLong: false, digest: digestKey(key), key };
  }
  return NOT_FOUND;
}
