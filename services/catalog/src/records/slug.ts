/**
 * Category slug of docs/api.md#response-bodies: lowercase, words joined by hyphens, characters
 * outside [a-z0-9-] dropped ("MLOps & Experiment Tracking" -> "mlops-experiment-tracking").
 */
export function categorySlug(name: string): string {
  return name
    .toLowerCase()
    .normalize('NFKD')
    .split(/\s+/)
    .map((word) => word.replace(/[^a-z0-9-]/g, ''))
    .filter(Boolean)
    .join('-')
    .replace(/-{2,}/g, '-')
    .replace(/^-|-$/g, '');
}

/** Slug form of docs/api.md#response-bodies, which tool slugs follow too. */
export const SLUG_PATTERN = '^[a-z0-9]+(?:-[a-z0-9]+)*$';
