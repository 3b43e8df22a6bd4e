// Who is one caller: the identity module's entry (its types, its options, and identify).
export type { ResolveKey, ResolveKeyContext, ResolvedKey } from './key-cache';
export type { Identify, IdentifyHooks, Identity, IdentityOptions, IdentityWarning, RequestFacts, ResolvedIdentityOptions } from './types';
export { IDENTITY_OPTION_NAMES, resolveIdentityOptions } from './options';
export { createIdentify, identifyFrom, UNKNOWN_IP_SUBJECT } from './identify';
