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
 * Text without control characters or lone surrogates (UTF-16 that is not valid Unicode): a name
 * is shown in lists, logs and the portal, where such characters forge or break lines.
 */
export const PLAIN_TEXT_PATTERN = '^[^\\p{Cc}\\p{Cs}]*$';
/** The same, but tabs and line breaks are allowed: free text of several lines. */
export const MULTILINE_TEXT_PATTERN = '^(?:[^\\p{Cc}\\p{Cs}]|[\\t\\n\\r])*$';

/**
 * A text field whose bounds hold after trimming (docs/api.md#api-keys-and-registration `name`, B5
 * `q`): validation trims it first, so the handler gets the trimmed text and the bounds are the
 * trimmed ones.
 */
export function trimmedString(options: {
  minLength: number;
  maxLength: number;
  description: string;
  pattern?: string;
}) {
  const { minLength, maxLength, description, pattern } = options;
  return Type.String({
    minLength,
    maxLength,
    transform: ['trim'],
    ...(pattern !== undefined && { pattern }),
    description: `${description} (${minLength}–${maxLength} characters after trimming)`,
  });
}
