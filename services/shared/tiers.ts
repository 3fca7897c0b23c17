/** The access tiers of SPEC A 2.7. The tier decides quota, data depth and endpoint access. */
export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

export function isTier(value: unknown): value is Tier {
  return value === 'free' || value === 'pro' || value === 'enterprise';
}

/** Whether `tier` gets what `minimum` gets (Enterprise > Pro > Free). */
export function tierAtLeast(tier: Tier, minimum: Tier): boolean {
  return TIERS.indexOf(tier) >= TIERS.indexOf(minimum);
}

export function isPaidTier(tier: Tier): boolean {
  return tier !== 'free';
}

export const TIER_LABELS: Record<Tier, string> = {
  free: 'Free',
  pro: 'Pro',
  enterprise: 'Enterprise',
};

/**
 * Headers the gateway uses to tell the catalog who is calling (SPEC B8). Clients' copies are
 * stripped by the gateway; the catalog believes them only next to the internal token.
 */
export const INTERNAL_HEADERS = {
  token: 'x-internal-token',
  tier: 'x-caller-tier',
  keyId: 'x-caller-key-id',
} as const;
