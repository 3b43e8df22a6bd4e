// Reads a response body for its problem details up to a size and a time, and cancels it past either.

/** Why a bounded read gave up, or the text it read. */
export type BoundedRead = { text: string } | { cut: 'size' | 'time' | 'error' };

/** The chunks as UTF-8 text (no Buffer: the fetch entry runs in browsers too). */
function decode(chunks: readonly Uint8Array[], size: number): string {
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
}

/**
 * Reads `body` to its end, unless it passes `maxBytes` or takes longer than `timeoutMs`: then it
 * stops, cancels the stream (so an endless body is neither waited for nor held in memory) and says
 * why. At most `maxBytes` plus one chunk is ever held.
 */
export async function readBounded(body: ReadableStream<Uint8Array>, maxBytes: number, timeoutMs: number): Promise<BoundedRead> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<'time'>((resolve) => {
    timer = setTimeout(() => resolve('time'), timeoutMs);
  });
  let outcome: BoundedRead | undefined;
  try {
    while (!outcome) {
      const next = await Promise.race([reader.read(), expired]);
      if (next === 'time') outcome = { cut: 'time' };
      else if (next.done) outcome = { text: decode(chunks, size) };
      else if ((size += next.value.byteLength) > maxBytes) outcome = { cut: 'size' };
      else chunks.push(next.value);
    }
  } catch {
    outcome = { cut: 'error' };
  } finally {
    clearTimeout(timer);
  }
  // Not awaited: a tee'd branch (a Response.clone()) settles its cancel only once the other branch is
  // cancelled too. A pending read() ends with it; the stream's own error is not ours to report.
  if (!('text' in outcome)) reader.cancel().catch(() => undefined);
  else reader.releaseLock();
  return outcome;
}
