/**
 * Which keys were asked before, remembered as 32-bit hashes in a fixed table (TinyLFU's
 * "doorkeeper"): the response cache keeps an answer from its key's second request on. No key is
 * kept. An LRU of the last 10,000 key strings, used before, kept every URL of a stream of unique
 * ones alive for thousands of requests, long enough to be promoted to the old generation and
 * collected there. Each slot holds the last key hashed to it, so a key is remembered until
 * another takes its slot (a table of 16,384 slots remembers about as long as that LRU did, though
 * of 1,000 keys asked twice in a row about 5 % lose their slot to another and are admitted at
 * their third request); two keys of the same hash count as one, which can only admit a key a
 * request early.
 */
export class Doorkeeper {
  private readonly slots: Int32Array;

  /** `slots`: a power of two. */
  constructor(slots: number) {
    this.slots = new Int32Array(slots);
  }

  /** True when the key was seen before; otherwise it is remembered from now on. */
  seenBefore(key: string): boolean {
    // Never 0, the value of an empty slot.
    const hash = fnv1a(key) | 1;
    const slot = hash & (this.slots.length - 1);
    if (this.slots[slot] === hash) return true;
    this.slots[slot] = hash;
    return false;
  }

  clear(): void {
    this.slots.fill(0);
  }
}

/** FNV-1a over the string's UTF-16 code units: fast, and spreads URLs that differ by a digit. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash;
}
