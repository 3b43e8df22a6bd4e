// dispatchFetch for the edge race tests, resent when miniflare's connection to workerd was closed before an answer (a loaded machine's idle keep-alive socket).
import type { Miniflare } from 'miniflare';

type Answer = Awaited<ReturnType<Miniflare['dispatchFetch']>>;

/** Whether `error` is undici's "the socket closed before any answer", not an answer of the worker. */
function closedBeforeAnswer(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  return error instanceof TypeError && (cause?.code === 'UND_ERR_SOCKET' || cause?.code === 'ECONNRESET' || /other side closed/.test(cause?.message ?? ''));
}

/**
 * `mf.dispatchFetch(url)`, sent again (up to 3 times) when the connection closed before an answer.
 * A resend cannot hide an over-admission: the tests count answers, so a lost admission that was
 * decided shows as one admission fewer, and a resend is one more request the limit must refuse.
 */
export async function dispatch(mf: Miniflare, url: string, init?: Parameters<Miniflare['dispatchFetch']>[1]): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await mf.dispatchFetch(url, init);
    } catch (error) {
      if (attempt >= 3 || !closedBeforeAnswer(error)) throw error;
    }
  }
}
