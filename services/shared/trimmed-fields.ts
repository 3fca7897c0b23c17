import { Type } from '@sinclair/typebox';
import type { FuncKeywordDefinition } from 'ajv';
import ajvKeywords from 'ajv-keywords';

type Ajv = Parameters<typeof ajvKeywords>[0];

/**
 * The one form of human-entered text: NFC, so that "é" typed as one character or as "e" and a
 * combining accent is stored, compared and counted as the same name.
 */
export function normalizedText(text: string): string {
  return text.normalize('NFC');
}

/**
 * `normalize: "NFC"`: puts a string into normalizedText's form in place, before the length and
 * pattern keywords check it (Ajv runs type-free keywords such as this one first).
 */
const NORMALIZE_KEYWORD: FuncKeywordDefinition = {
  keyword: 'normalize',
  schemaType: 'string',
  metaSchema: { const: 'NFC' },
  modifying: true,
  errors: false,
  before: 'enum',
  validate(_form: 'NFC', data: unknown, _schema, context) {
    if (typeof data === 'string' && context?.parentData !== undefined) {
      (context.parentData as Record<string | number, unknown>)[context.parentDataProperty] =
        normalizedText(data);
    }
    return true;
  },
};

/**
 * Ajv plugins every validator of the API loads: ajv-keywords' `transform`, which trims a string
 * in place before its other keywords are checked, and `normalize` (above).
 */
export const AJV_PLUGINS = [
  (ajv: Ajv) => ajvKeywords(ajv, 'transform'),
  (ajv: Ajv) => ajv.addKeyword(NORMALIZE_KEYWORD),
];

/** Keywords only the validator reads: no OpenAPI or JSON Schema keyword, left out of documents. */
export const VALIDATOR_ONLY_KEYWORDS: readonly string[] = ['transform', 'normalize'];

/**
 * What human-entered text may not hold: control characters (Cc), invisible format characters
 * (Cf: zero-width spaces and joiners, bidi overrides, the BOM, the soft hyphen), line and
 * paragraph separators (Zl, Zp) and lone surrogates (Cs: UTF-16 that is not valid Unicode). A
 * name is shown in lists, logs and the portal, where these forge or break lines, reorder what
 * follows them, or make a name look blank or like another.
 */
const REFUSED_CHARACTERS = '\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Cs}';

/** Text of one line, without the refused characters. */
export const PLAIN_TEXT_PATTERN = `^[^${REFUSED_CHARACTERS}]*$`;
/** The same, but tabs and line breaks are allowed: free text of several lines. */
export const MULTILINE_TEXT_PATTERN = `^(?:[^${REFUSED_CHARACTERS}]|[\\t\\n\\r])*$`;

/** What each text pattern refuses, in the words of a 400 ("must be a string …, without …"). */
export const TEXT_PATTERN_WORDS: Record<string, string> = {
  [PLAIN_TEXT_PATTERN]:
    'without control characters, invisible formatting characters (zero-width, bidi, BOM), Unicode line separators or invalid Unicode',
  [MULTILINE_TEXT_PATTERN]:
    'without control characters (but tabs and line breaks), invisible formatting characters (zero-width, bidi, BOM), Unicode line separators or invalid Unicode',
};

const PLAIN_TEXT = new RegExp(PLAIN_TEXT_PATTERN, 'u');
const MULTILINE_TEXT = new RegExp(MULTILINE_TEXT_PATTERN, 'u');

/**
 * Checks text outside a JSON Schema validator (the dataset's records) by the patterns above:
 * undefined when it passes, else what is refused, in the words of the API's 400.
 */
export function textProblem(text: string, lines: 'one' | 'several'): string | undefined {
  const pattern = lines === 'one' ? PLAIN_TEXT : MULTILINE_TEXT;
  return pattern.test(text) ? undefined : TEXT_PATTERN_WORDS[pattern.source];
}

/** A description that says its bounds are the trimmed ones. */
function afterTrimming(description: string, minLength: number, maxLength: number): string {
  return `${description} (${minLength}–${maxLength} characters after trimming)`;
}

/**
 * A text field whose bounds hold after trimming (docs/api.md#api-keys-and-registration `name`,
 * the search's `q`): validation trims it first, so the handler gets the trimmed text and the
 * bounds are the trimmed ones.
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
    description: afterTrimming(description, minLength, maxLength),
  });
}

/**
 * A field a person writes (a name, a use case, a description): the one text rule of the API
 * (docs/api.md#parameters-and-validation). Validation trims it if `trimmed` (the bounds are
 * then the trimmed ones, so a required field cannot be blank), puts it in NFC and refuses the
 * characters above; `lines: 'several'` allows tabs and line breaks.
 */
export function humanText(options: {
  minLength?: number;
  maxLength: number;
  description?: string;
  lines: 'one' | 'several';
  trimmed?: boolean;
}) {
  const { minLength, maxLength, description, lines, trimmed = false } = options;
  return Type.String({
    ...(minLength !== undefined && { minLength }),
    maxLength,
    ...(trimmed && { transform: ['trim'] }),
    normalize: 'NFC',
    pattern: lines === 'one' ? PLAIN_TEXT_PATTERN : MULTILINE_TEXT_PATTERN,
    ...(description !== undefined && {
      description: trimmed ? afterTrimming(description, minLength ?? 0, maxLength) : description,
    }),
  });
}
