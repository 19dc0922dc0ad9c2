// MurmurHash3 x86_32 (Austin Appleby's reference), over bytes, as the
// server buckets callers (api/openapi.yaml, Resolving: murmur3_x86_32(utf8(s)), seed 0).

const encoder = new TextEncoder();

export function murmur3(data: Uint8Array, seed = 0): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const n = data.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k = (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)) >>> 0;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  switch (n & 3) {
    case 3:
      k ^= data[blocks + 2]! << 16;
    // falls through
    case 2:
      k ^= data[blocks + 1]! << 8;
    // falls through
    case 1:
      k ^= data[blocks]!;
      k = Math.imul(k, c1);
      k = (k << 15) | (k >>> 17);
      k = Math.imul(k, c2);
      h ^= k;
  }
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The caller's bucket in a release: murmur3(utf8("<release_id>:<key>")) mod 10000. */
export function bucket(releaseId: string, key: string): number {
  return murmur3(encoder.encode(`${releaseId}:${key}`)) % 10000;
}
