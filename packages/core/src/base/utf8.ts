// A string's UTF-8 length and bytes without Buffer (a Worker without nodejs_compat has none): Content-Length and Cluster slots.

/** The number of bytes `text` takes as UTF-8, a lone surrogate as U+FFFD (3): `Buffer.byteLength(text)`. */
export function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a pair: 2 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

const ENCODER = new TextEncoder();

/** `text` as UTF-8 bytes: `Buffer.from(text, 'utf8')`. */
export function utf8Bytes(text: string): Uint8Array {
  return ENCODER.encode(text);
}
