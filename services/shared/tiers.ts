/**
 * The access tiers of docs/api.md#tiers. The tier decides quota, data depth and endpoint access.
 */
export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

export function isTier(value: unknown): value is Tier {
  return value === 'free' || value === 'pro' || value === 'enterprise';
}

/** Whether `tier` gets what `minimum` gets (Enterprise > Pro > Free). */
export function tierAtLeast(tier: Tier, minimum: Tier): boolean {
  return TIERS.indexOf(tier) >= TIERS.indexOf(minimum);
}

export const TIER_LABELS: Record<Tier, string> = {
  free: 'Free',
  pro: 'Pro',
  enterprise: 'Enterprise',
};
