import type { Tool } from '../../schemas/tool';
import type { Synonyms } from './synonyms';
import { tokenize } from './text';

/**
 * What a tool is searchable by, field by field: the terms the embedded index holds, and that
 * the other engines' hits are ranked by, so that every store ranks alike.
 *
 * - `nameCompact`: a name of several words run together ("huggingfacetransformers"), so that
 *   "huggingface" finds "Hugging Face Transformers" (a prefix of it) and "open ai" OpenAI;
 * - `phrases`: each tag and the category of several words run together ("texttospeech",
 *   "imagegeneration"), so that word order counts: "text to speech" and "speech to text" find
 *   different tools;
 * - `lead`: the description's first words, which say what the tool is ("Enterprise RAG-as-a-
 *   service platform ..."): a word found there marks a tool about it, not one mentioning it;
 * - `synonyms`: one key per synonym group whose phrase the tool holds, and where (see
 *   `synonymKey`), so that "tts" finds tools saying "text to speech".
 */
export const INDEX_FIELDS = [
  'name',
  'nameCompact',
  'tags',
  'phrases',
  'category',
  'description',
  'lead',
  'synonyms',
] as const;
export type IndexField = (typeof INDEX_FIELDS)[number];
export type TextField = Exclude<IndexField, 'synonyms'>;

export type ToolTerms = Record<IndexField, string[]>;

/**
 * How docs/api.md#response-bodies ranks a field: a match in the name (3) outranks one in tags or
 * category (2), which outranks one in the description (1).
 */
export const FIELD_RANK: Record<TextField, number> = {
  name: 3,
  nameCompact: 3,
  tags: 2,
  phrases: 2,
  category: 2,
  description: 1,
  lead: 1,
};

/** The description's first words: the `lead` field. */
const LEAD_WORDS = 10;

/** Where a synonym's phrase was found, as one letter of its key. */
const SYNONYM_PLACES = { n: 3, t: 2, c: 2, d: 1, l: 1 } as const;
type SynonymPlace = keyof typeof SYNONYM_PLACES;

/**
 * A synonym's phrase found in one place: "~3.1t" is phrase 1 of group 3 in a tag. `~` cannot
 * occur in a term of text (tokenize splits there), so a key never meets a word.
 */
export function synonymKey(group: number, phrase: number, place: SynonymPlace): string {
  return `~${group}.${phrase}${place}`;
}

/** Every place of a synonym key. */
export const SYNONYM_PLACE_LETTERS = Object.keys(SYNONYM_PLACES) as SynonymPlace[];

/**
 * The group a synonym key stands for, the field rank of its place, and whether that place is
 * the description's lead; undefined for any other term.
 */
export function parseSynonymKey(
  term: string,
): { group: number; rank: number; lead: boolean } | undefined {
  const key = /^~(\d+)\.\d+([a-z])$/.exec(term);
  const rank = key && SYNONYM_PLACES[key[2] as SynonymPlace];
  return rank ? { group: Number(key[1]), rank, lead: key[2] === 'l' } : undefined;
}

/** What a tool's terms are made of. */
type TermSource = Pick<Tool, 'name' | 'tags' | 'category' | 'description'>;

/** Whether two records of a tool have the same terms (a changed rating or URL changes none). */
export function sameTerms(a: TermSource, b: TermSource): boolean {
  return (
    a.name === b.name &&
    a.category === b.category &&
    a.description === b.description &&
    a.tags.length === b.tags.length &&
    a.tags.every((tag, i) => tag === b.tags[i])
  );
}

/** Every term of a tool, by field. */
export function toolTerms(tool: TermSource, synonyms: Synonyms): ToolTerms {
  const name = tokenize(tool.name);
  const tags = tool.tags.map(tokenize);
  const category = tokenize(tool.category);
  const description = tokenize(tool.description);
  const keys = new Set<string>();
  const addKeys = (words: string[], place: SynonymPlace) => {
    for (const { group, phrase } of synonyms.spans(words)) {
      keys.add(synonymKey(group, phrase, place));
    }
  };
  addKeys(name, 'n');
  for (const tag of tags) addKeys(tag, 't');
  addKeys(category, 'c');
  addKeys(description, 'd');
  addKeys(description.slice(0, LEAD_WORDS), 'l');
  return {
    name,
    nameCompact: name.length > 1 ? [name.join('')] : [],
    tags: tags.flat(),
    phrases: [...tags, category].filter((words) => words.length > 1).map((words) => words.join('')),
    category,
    // Split, not repeated: a word of the lead is a description match too (FIELD_RANK).
    description: description.slice(LEAD_WORDS),
    lead: description.slice(0, LEAD_WORDS),
    synonyms: [...keys],
  };
}
