// What DurableObjectStore and FloodgateDurableObject send each other: a batch of store requests as JSON, one answer each.
import type { FloodgateErrorCode } from '../../base/errors';
import type { StoreRequest, StoreResult } from '../store';

/** One POST to an object: requests decided in order; `reset` keys deleted first; `now` a test clock (honoured only where the object allows it). */
export interface WireBatch {
  readonly requests: readonly StoreRequest[];
  readonly reset?: readonly string[];
  readonly now?: number;
}

/** One request's answer: its result, or the error that request alone met. */
export type WireAnswer = { readonly ok: StoreResult } | { readonly error: { readonly code: FloodgateErrorCode; readonly message: string } };

/** JSON for a batch: a calendar window goes as its fields (its cached span left out: the object computes its own). */
export function encodeBatch(batch: WireBatch): string {
  return JSON.stringify(batch, (key, value: unknown) => (key === 'cached' ? undefined : value));
}
