import { Type } from '@sinclair/typebox';
import ajvKeywords from 'ajv-keywords';

/**
 * Ajv plugins every validator of the API loads: ajv-keywords' `transform`, which trims a
 * string in place before its other keywords are checked.
 */
export const AJV_PLUGINS = [
  (ajv: Parameters<typeof ajvKeywords>[0]) => ajvKeywords(ajv, 'transform'),
];

/**
 * A text field whose bounds hold after trimming (SPEC B2 `name`, B5 `q`): validation trims it
 * first, so the handler gets the trimmed text and the bounds are the trimmed ones.
 */
export function trimmedString(options: {
  minLength: number;
  maxLength: number;
  description: string;
}) {
  const { minLength, maxLength, description } = options;
  return Type.String({
    minLength,
    maxLength,
    transform: ['trim'],
    description: `${description} (${minLength}–${maxLength} characters after trimming)`,
  });
}
