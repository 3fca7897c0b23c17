import { isDeepStrictEqual } from 'node:util';
import type { Tool } from '../schemas/tool';

/** The top-level fields whose values differ between two versions of a tool, in field order. */
export function changedFields(before: Tool, after: Tool): string[] {
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...fields].filter(
    (field) => !isDeepStrictEqual(before[field as keyof Tool], after[field as keyof Tool]),
  );
}
