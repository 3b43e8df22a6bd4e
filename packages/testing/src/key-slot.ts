// Redis Cluster hash slot of a key: CRC16 (XMODEM) modulo 16384 with the {hash tag} rule.

const CRC16_TABLE: Uint16Array = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    table[i] = crc;
  }
  return table;
})();

/** CRC16-XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster uses. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) {
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ bytes[i]) & 0xff];
  }
  return crc;
}

/** Number of hash slots in a Redis Cluster. */
export const SLOT_COUNT = 16384;

/**
 * The cluster slot of a key. If the key contains `{...}` with at least one character between the
 * first `{` and the first `}` after it, only that part is hashed (Redis hash-tag rule).
 */
export function keySlot(key: string | Uint8Array): number {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const open = bytes.indexOf(0x7b); // '{'
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1); // '}'
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) & (SLOT_COUNT - 1);
  }
  return crc16(bytes) & (SLOT_COUNT - 1);
}
