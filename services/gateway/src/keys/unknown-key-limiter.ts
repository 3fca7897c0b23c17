import { Lru } from 'toad-cache';
import type { Clock } from '../quota/daily-window';

const WINDOW_MS = 60_000;

interface Window {
  count: number;
  endsAt: number;
}

/**
 * Unknown keys per client address and minute. The key checksum is public, so anyone can mint
 * well-formed keys that were never issued, and each one costs a store lookup; past the limit
 * an address is refused before that lookup. Fixed one-minute windows in a bounded LRU: the
 * count stays in process and in bounded memory, and an address pushed out of it starts again
 * from zero, which gains an attacker nothing over using a fresh address.
 */
export class UnknownKeyLimiter {
  private readonly windows: Lru<Window>;

  constructor(
    readonly perMinute: number,
    private readonly clock: Clock = Date.now,
    maxAddresses = 10_000,
  ) {
    this.windows = new Lru<Window>(maxAddresses);
  }

  /** Seconds until this address may present an unknown key again; 0 while it may. */
  secondsBlocked(address: string): number {
    const window = this.windows.get(address);
    const now = this.clock();
    if (window === undefined || window.endsAt <= now || window.count < this.perMinute) return 0;
    return Math.ceil((window.endsAt - now) / 1000);
  }

  /** Counts one unknown key presented from this address. */
  count(address: string): void {
    const window = this.windows.get(address);
    const now = this.clock();
    if (window === undefined || window.endsAt <= now) {
      this.windows.set(address, { count: 1, endsAt: now + WINDOW_MS });
    } else {
      window.count++;
    }
  }
}
