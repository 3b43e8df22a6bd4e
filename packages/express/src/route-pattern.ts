// Express routing read, never run: which route (its full pattern, mounts included) a request will reach.
import type { Request } from 'express';

/** Marks Floodgate's middleware, so an app-level one can see that a route has its own. */
export const FLOODGATE = Symbol.for('floodgate.express.middleware');

interface Route {
  path: unknown;
  stack: { handle: unknown }[];
  /** The methods the route was registered for; `_all` when `.all()` was (Express 4 and router 2 alike). */
  methods?: Record<string, boolean | undefined>;
  _handles_method?(method: string): boolean; // Express 4
  _handlesMethod?(method: string): boolean; // Express 5 (router 2)
}

interface Layer {
  route?: Route;
  handle: { stack?: Layer[] };
  keys?: { name: string | number }[];
  regexp?: RegExp & { fast_slash?: boolean };
  path?: string;
  /** Router >= 2.3 (Express 5): the path given to app.use, a string, a RegExp or an array of them. */
  rawPath?: unknown;
  /** Express 4 and router < 2.3: a boolean, with the matched part left on `path`. Router >= 2.3: the match. */
  match(path: string): boolean | { path: string; pattern?: unknown } | false;
}

export interface FoundRoute {
  /** The full pattern, e.g. '/orgs/:org/items/:id'. */
  readonly pattern: string;
  readonly route: Route;
}

/** True for a route registered for every method (`app.all()`, `route.all()`): one bucket for all of them. */
export function answersEveryMethod(route: Route | undefined): boolean {
  return route?.methods?._all === true;
}

type App = { parent?: App; mountpath?: unknown; _router?: { stack: Layer[] }; router?: { stack: Layer[] } };

/** An app's own router: Express 4 keeps it on `_router`, Express 5 on `router` (a getter that throws on 4). */
function stackOf(app: App | undefined): Layer[] | undefined {
  try {
    return (app?._router ?? app?.router)?.stack;
  } catch {
    return undefined;
  }
}

/** A mounted sub-app's place in its parents, as the patterns given to app.use ('/v1', '/orgs/:org'). */
function mountPrefix(app: App): string {
  let prefix = '';
  for (let a: App | undefined = app; a?.parent; a = a.parent) {
    const given = Array.isArray(a.mountpath) ? a.mountpath.join(',') : String(a.mountpath ?? '');
    prefix = given.replace(/\/+$/, '') + prefix;
  }
  return prefix;
}

/** The path routing starts from, as Express's own `parseurl(req).pathname` reads it. */
function pathnameOf(url: string): string {
  const end = url.search(/[?#]/);
  let path = end === -1 ? url : url.slice(0, end);
  if (!path.startsWith('/')) {
    const scheme = path.indexOf('://');
    const slash = scheme === -1 ? -1 : path.indexOf('/', scheme + 3);
    path = slash === -1 ? '/' : path.slice(slash);
  }
  return path;
}

/** Static text as a pattern: matching ignores case and a trailing slash by default, so must the key. */
function normalise(text: string, caseInsensitive: boolean): string {
  const trimmed = text.replace(/\/+$/, '');
  return caseInsensitive ? trimmed.toLowerCase() : trimmed;
}

/** Index of the `)` that closes the group opening at `open`, skipping escapes and character classes. */
function closing(source: string, open: number): number {
  let depth = 0;
  let inClass = false;
  for (let i = open; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/**
 * Reads a path-to-regexp 0.1 source (Express 4) back into the pattern it was made from: escaped
 * characters are literal text, each capture group is its parameter (`:name`), a `(?:...)` group of
 * those is kept (with `?` when optional). Anything else (a character class, a quantifier outside a
 * capture, an alternation) means the mount matches URLs of many shapes: undefined, so the caller
 * names the mount by its regexp and never by the URL text it matched.
 */
function readPattern(source: string, keys: readonly { name: string | number }[], next: { key: number }): string | undefined {
  let out = '';
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      out += source[++i];
    } else if (c === '(') {
      const end = closing(source, i);
      if (end === -1) return undefined;
      const optional = source[end + 1] === '?';
      if (source.startsWith('(?:', i)) {
        const inner = readPattern(source.slice(i + 3, end), keys, next);
        if (inner === undefined) return undefined;
        out += optional ? `{${inner}}?` : inner;
      } else if (source[i + 1] === '?') {
        return undefined; // a lookahead or named group: not something path-to-regexp writes mid-path
      } else {
        const key = keys[next.key++];
        if (key === undefined) return undefined;
        out += `:${key.name}${optional ? '?' : ''}`;
      }
      i = optional ? end + 1 : end;
    } else if ('[]{}*+?|^$.'.includes(c)) {
      return undefined;
    } else {
      out += c;
    }
  }
  return out;
}

/** The end every Express 4 mount's regexp carries: an optional slash, then a segment boundary. */
const MOUNT_END = '\\/?(?=\\/|$)';

/**
 * The pattern of a mount. Express 4 keeps only the regexp: it is read back into the pattern given
 * to app.use ('/orgs/:org'), so the key never holds a value from the URL. A regexp or array mount
 * (`app.use(/\/v\d+/, r)`, `app.use(['/a', '/b'], r)`) is named by its regexp: one bucket for the
 * mount, whatever URL it matched. Router 2.0-2.2 (early Express 5) keep neither: a parameterised
 * mount is then named by its place.
 */
function mountPattern(layer: Layer, matched: string, index: number): string {
  const { regexp, keys = [] } = layer;
  if (!regexp) return keys.length === 0 ? normalise(matched, true) : `/{mount ${index}}`;
  const ci = regexp.flags.includes('i');
  const { source } = regexp;
  const body = source.startsWith('^') && source.endsWith(MOUNT_END) ? source.slice(1, -MOUNT_END.length) : undefined;
  const next = { key: 0 };
  const read = body === undefined ? undefined : readPattern(body, keys, next);
  if (read === undefined || next.key !== keys.length) return `/{${String(regexp)}}`;
  return normalise(ci ? read.toLowerCase() : read, false);
}

function handles(route: Route, method: string): boolean {
  const check = (m: string) => (route._handlesMethod ?? route._handles_method)?.call(route, m) ?? false;
  return check(method) || (method === 'HEAD' && check('GET'));
}

/**
 * The routes this request matches, in the order Express would try them, with their full patterns,
 * until `wanted` accepts one (returned); undefined when none is accepted. A plain recursive walk,
 * not a generator: the app-wide middleware runs it on every request.
 */
function walk(stack: Layer[], path: string, prefix: string, method: string, wanted: (found: FoundRoute) => boolean): FoundRoute | undefined {
  for (let i = 0; i < stack.length; i++) {
    const layer = stack[i];
    const nested = layer.handle?.stack;
    if (!layer.route && !Array.isArray(nested)) continue;
    let result: ReturnType<Layer['match']>;
    try {
      result = layer.match(path);
    } catch {
      continue; // a malformed %-escape: Express answers 400 itself
    }
    if (!result) continue;
    const matched = typeof result === 'object' ? result.path : (layer.path ?? '');
    const given = typeof result === 'object' ? result.pattern : undefined;
    if (layer.route) {
      if (handles(layer.route, method)) {
        const found = { pattern: prefix + String(given ?? layer.route.path), route: layer.route };
        if (wanted(found)) return found;
      }
      continue;
    }
    // An array mount is one mount: one name for all its paths, not one bucket per path.
    const mount = Array.isArray(layer.rawPath)
      ? `/{${layer.rawPath.map(String).join(',')}}`
      : given !== undefined
        ? normalise(String(given), false)
        : mountPattern(layer, matched, i);
    const rest = path.slice(matched.length);
    const found = walk(nested!, rest.startsWith('/') ? rest : `/${rest}`, prefix + mount, method, wanted);
    if (found) return found;
  }
  return undefined;
}

const anyRoute = () => true;

/**
 * The first route an app-level middleware's request will reach; undefined when none matches. In a
 * mounted sub-app the URL's prefix belongs to the parents, so the walk starts from the sub-app with
 * req.url, which is only relative to the sub-app when `handler` sits at its root.
 */
export function firstRoute(req: Request, handler: unknown): FoundRoute | undefined {
  const app = req.app as unknown as App;
  const stack = stackOf(app);
  if (!stack) return undefined;
  let path = pathnameOf(req.originalUrl ?? req.url);
  let prefix = '';
  if (app.parent) {
    const atRoot = stack.some((l) => l.handle === handler && (l.regexp?.fast_slash || (l as { slash?: boolean }).slash));
    if (!atRoot) return undefined;
    path = pathnameOf(req.url);
    prefix = mountPrefix(app);
  }
  return walk(stack, path, prefix, req.method, anyRoute);
}

/**
 * The full pattern of the route a route-level middleware runs in (req.route), mounts included. In a
 * sub-app the part of the URL the parents consumed is unknown here: each '/'-suffix is tried, and
 * only a walk that reaches this very route counts.
 */
export function currentRoutePattern(req: Request): string {
  const route = req.route as Route;
  const app = req.app as unknown as App;
  const stack = stackOf(app);
  const path = pathnameOf(req.originalUrl ?? req.url);
  const prefix = app.parent ? mountPrefix(app) : '';
  for (let at = 0; stack && at !== -1; at = app.parent ? path.indexOf('/', at + 1) : -1) {
    const found = walk(stack, path.slice(at) || '/', prefix, req.method, (f) => f.route === route);
    if (found) return found.pattern;
  }
  // Not reachable by a walk: the route's own path, never the raw URL.
  return prefix + String(route.path);
}

/** The marks of the Floodgate middlewares this route runs itself (which then decide instead); empty when none. */
export function ownLimiters<M>(route: Route): M[] {
  const marks: M[] = [];
  for (const layer of route.stack) {
    if (typeof layer.handle === 'function' && FLOODGATE in layer.handle) marks.push((layer.handle as unknown as Record<symbol, M>)[FLOODGATE]);
  }
  return marks;
}

/** True when `handler` runs inside req.route's own stack (mounted on the route, not app-wide). */
export function isRouteLevel(req: Request, handler: unknown): boolean {
  const route = req.route as Route | undefined;
  return !!route && route.stack.some((layer) => layer.handle === handler);
}
