import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DATASET_DIR } from '../../records/dataset';

/**
 * `data/synonyms.json` (docs/api.md#search): groups of phrases that mean the same in this catalog
 * ("tts", "text to speech"). A query holding one phrase of a group also finds tools holding
 * another, as strongly as if it held that one. docs/dataset-format.md describes the file.
 */
const Phrase = Type.String({
  pattern: '^[a-z0-9]+( [a-z0-9]+)*$',
  maxLength: 60,
  description: 'Lowercase words of letters and digits, one space apart',
});
export const SynonymsFile = Type.Object(
  {
    description: Type.Optional(Type.String()),
    groups: Type.Array(Type.Array(Phrase, { minItems: 2, uniqueItems: true }), { minItems: 1 }),
  },
  { additionalProperties: false },
);
export type SynonymsFile = Static<typeof SynonymsFile>;

export const SYNONYMS_FILE = 'synonyms.json';

/** A synonym group's phrase (`phrase`: its place in the group) as text holds it. */
interface GroupPhrase {
  words: string[];
  group: number;
  phrase: number;
}

/** Where a phrase of a group occurs in a list of words: words `start` to `end` (exclusive). */
export interface SynonymSpan {
  group: number;
  phrase: number;
  start: number;
  end: number;
}

export class Synonyms {
  /** Each phrase by its first word, so that scanning text looks up one word at a time. */
  private readonly byFirstWord = new Map<string, GroupPhrase[]>();

  constructor(readonly groups: readonly (readonly string[])[]) {
    const seen = new Map<string, number>();
    groups.forEach((phrases, group) => {
      phrases.forEach((phrase, index) => {
        const other = seen.get(phrase);
        if (other !== undefined && other !== group) {
          throw new Error(
            `the phrase "${phrase}" is in two synonym groups (${other} and ${group})`,
          );
        }
        seen.set(phrase, group);
        const words = phrase.split(' ');
        const list = this.byFirstWord.get(words[0]!) ?? [];
        list.push({ words, group, phrase: index });
        this.byFirstWord.set(words[0]!, list);
      });
    });
  }

  /** Every occurrence of a group's phrase in `words` (overlaps included). */
  spans(words: readonly string[]): SynonymSpan[] {
    const spans: SynonymSpan[] = [];
    words.forEach((word, start) => {
      for (const phrase of this.byFirstWord.get(word) ?? []) {
        const end = start + phrase.words.length;
        if (end > words.length) continue;
        if (phrase.words.every((w, i) => words[start + i] === w)) {
          spans.push({ group: phrase.group, phrase: phrase.phrase, start, end });
        }
      }
    });
    return spans;
  }
}

/** Reads and checks `data/synonyms.json`: the schema, and each phrase in one group only. */
export function loadSynonyms(dir: string = DATASET_DIR): Synonyms {
  const file = path.join(dir, SYNONYMS_FILE);
  const content: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const error = Value.Errors(SynonymsFile, content).First();
  if (error) throw new Error(`${file}: ${error.path || '/'}: ${error.message}`);
  try {
    return new Synonyms((content as SynonymsFile).groups);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
}

let bundled: Synonyms | undefined;

/** The bundled synonyms, read once. */
export function bundledSynonyms(): Synonyms {
  bundled ??= loadSynonyms();
  return bundled;
}
