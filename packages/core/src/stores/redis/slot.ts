// The Redis Cluster hash slot of a key (CRC16-XMODEM of its {hash tag}, mod 16384): which subjects may share one script call on a Cluster.
import { utf8Bytes } from '../../base/utf8';

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/**
 * The slot Redis Cluster keeps `key` in: of the part between the first '{' and the next '}' when
 * that part is not empty, else of the whole key (the Cluster specification's rule). Keys are
 * hashed as UTF-8, as Redis receives them.
 */
export function slotOf(key: string): number {
  const open = key.indexOf('{');
  let part = key;
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) part = key.slice(open + 1, close);
  }
  let crc = 0;
  // Floodgate's keys are ASCII (a prefix and a hex digest): their UTF-8 bytes are their char codes, no Buffer needed.
  for (let i = 0; i < part.length; i++) {
    const code = part.charCodeAt(i);
    if (code > 127) return slotOfBytes(utf8Bytes(part));
    crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ code) & 0xff];
  }
  return crc & 16383;
}

function slotOfBytes(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]) & 0xff];
  return crc & 16383;
}
