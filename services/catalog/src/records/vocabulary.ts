import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DATASET_DIR } from './dataset';
import { SLUG_PATTERN } from './slug';

/**
 * `data/vocabulary.json`: the categories a tool may belong to and the tags it may carry. The
 * one source of these lists; docs/dataset-format.md repeats them and a test keeps both equal.
 */
export const Vocabulary = Type.Object({
  categories: Type.Array(
    Type.Object({ name: Type.String(), slug: Type.String({ pattern: SLUG_PATTERN }) }),
  ),
  tags: Type.Array(Type.String({ pattern: SLUG_PATTERN })),
});
export type Vocabulary = Static<typeof Vocabulary>;

export function loadVocabulary(dir: string = DATASET_DIR): Vocabulary {
  const file = path.join(dir, 'vocabulary.json');
  const vocabulary: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const error = Value.Errors(Vocabulary, vocabulary).First();
  if (error) throw new Error(`${file}: ${error.path || '/'}: ${error.message}`);
  return vocabulary as Vocabulary;
}
