// Takes the plugin's app-wide hook out of a matched route's hook list, so a limited request runs one Floodgate hook.
//
// Fastify builds each route's hook list once, when the app gets ready: the app's hooks of that
// stage (each bound to its instance), then the route's own. The plugin's app-wide hook has to be an
// app hook, because that is the only kind Fastify gives its 404 handler (lib/four-oh-four.js: the
// not-found context takes the instance's hooks, and onRoute never fires for it). On a matched
// route it does nothing once the early-route warning is settled, so the first request of each
// route takes it out of that route's list: from then on a limited route runs its own hook only, an
// unlimited one none. The 404 contexts keep it, so unmatched requests are limited as before.
//
// The route's list is reached through Fastify's private request symbol 'fastify.context'. Each step
// is checked where it is used; if one does not hold (another Fastify, another shape), the hook
// stays where it is and runs as it always did: two hooks, the same behaviour.

/** A callback-style Fastify hook, as the plugin registers it. */
export type CallbackHook<Req, Rep> = (request: Req, reply: Rep, done: (error?: Error) => void) => void;

/** The description of the symbol Fastify (5.x) keeps a request's route context under. */
export const CONTEXT_SYMBOL = 'fastify.context';

/** Registrations so far: each names its app-wide hook apart, so one never takes out another's. */
let registrations = 0;

/** A request's route context (where Fastify keeps the route's hook lists), or undefined where it cannot be found. */
export function routeContextOf(request: object, key: symbol | undefined): Record<string, unknown> | undefined {
  if (key === undefined) return undefined;
  const context = (request as Record<symbol, unknown>)[key];
  return typeof context === 'object' && context !== null ? (context as Record<string, unknown>) : undefined;
}

/** The symbol a request's route context is under, found by its description; undefined if the request has none. */
export function contextKeyOf(request: object): symbol | undefined {
  return Object.getOwnPropertySymbols(request).find((s) => s.description === CONTEXT_SYMBOL);
}

/**
 * `list` without the one function named `bound`, or undefined when `list` is not an array holding
 * exactly one (then nothing is changed). Empty becomes null, as Fastify stores a stage without hooks.
 */
export function withoutHook(list: unknown, bound: string): unknown[] | null | undefined {
  if (!Array.isArray(list)) return undefined;
  let at = -1;
  for (let i = 0; i < list.length; i++) {
    if (typeof list[i] !== 'function' || (list[i] as { name: string }).name !== bound) continue;
    if (at >= 0) return undefined;
    at = i;
  }
  if (at < 0) return undefined;
  const rest = list.filter((_, i) => i !== at);
  return rest.length > 0 ? rest : null;
}

export interface OneHook<Req extends object, Rep> {
  /** The app-wide hook to register: `hook`, renamed so that its bound copies can be told apart. */
  hook: CallbackHook<Req, Rep>;
  /** Takes the app-wide hook out of this request's route (a matched one) for every later request. */
  detach(request: Req): void;
}

/**
 * Wraps the app-wide hook of one registration in `stage`. `find` is how the context symbol is
 * looked up (Fastify's, by description, unless a test says otherwise).
 */
export function oneHook<Req extends object, Rep>(stage: string, hook: CallbackHook<Req, Rep>, find: (request: object) => symbol | undefined = contextKeyOf): OneHook<Req, Rep> {
  const name = `floodgateUnmatched${++registrations}`;
  // Function.prototype.bind names its copy 'bound ' + this name: how the copy in a route's list is known.
  Object.defineProperty(hook, 'name', { value: name });
  const bound = `bound ${name}`;
  let key: symbol | undefined;
  let usable = true;
  // Contexts where the hook could not be taken out: not tried again.
  const kept = new WeakSet<object>();
  return {
    hook,
    detach(request) {
      if (!usable) return;
      if (key === undefined || !(key in request)) {
        key = find(request);
        if (key === undefined) {
          usable = false; // not this Fastify's shape: two hooks, as before
          return;
        }
      }
      const context = routeContextOf(request, key);
      if (context === undefined || kept.has(context)) return;
      const rest = withoutHook(context[stage], bound);
      if (rest === undefined) kept.add(context);
      else context[stage] = rest;
    },
  };
}
