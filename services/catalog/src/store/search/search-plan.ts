import type { Synonyms } from './synonyms';
import { adjacentSwaps, compact, maxEdits, tokenize } from './text';
import { SYNONYM_PLACE_LETTERS, synonymKey } from './tool-terms';

/**
 * Words that say nothing in a directory of AI tools, or nothing at all. Next to other words
 * they are left out of the search and the ranking ("ai coding assistant" is about coding
 * assistants, not about every tool named "... AI"); on their own ("ai") they are searched as
 * usual. They still join their neighbours ("open ai" -> "openai") and phrases ("text to speech").
 */
const QUIET_WORDS = new Set([
  'ai',
  'tool',
  'tools',
  'app',
  'apps',
  'platform',
  'software',
  'a',
  'an',
  'and',
  'for',
  'from',
  'in',
  'of',
  'on',
  'or',
  'the',
  'to',
  'with',
]);

/** Words of a query that count; the rest of a long query is ignored. */
export const MAX_QUERY_WORDS = 20;

/** Adjacent words joined: at most this many. */
const MAX_JOINED = 4;

/** A run of query words that also matches as one word or phrase: these words count for it. */
export interface Covering {
  /** Indexes into `SearchPlan.words`. */
  covers: number[];
}

/**
 * A search query, read once into what every engine needs (docs/api.md#search): the words to find
 * (each as a word prefix, or with typos by its length), neighbouring words joined, and the synonym
 * groups its phrases belong to.
 */
export interface SearchPlan {
  /** The whole query run together: a tool with this name, run together, is an exact match. */
  exactName: string;
  /** The words that are searched and ranked, once each. */
  words: string[];
  /** Neighbouring words run together ("open ai" -> "openai"), 2 to 4 of them. */
  joins: (Covering & { text: string })[];
  /** The synonym groups the query's phrases belong to, with the words each phrase covers. */
  groups: (Covering & { group: number })[];
  /**
   * The synonym keys of the tools holding a phrase of those groups (see `synonymKey`), less
   * those the words find anyway: a phrase of one word that a query word is a prefix of ("llm"
   * and "llms" for the query "llm") is found as that word, in the same field.
   */
  synonymKeys: string[];
}

export function planSearch(text: string, synonyms: Synonyms): SearchPlan {
  const tokens = tokenize(text).slice(0, MAX_QUERY_WORDS);
  const quietOnly = tokens.every((token) => QUIET_WORDS.has(token));
  const words: string[] = [];
  // Where each token stands in `words`, or -1 for a quiet word.
  const wordOf = tokens.map((token) => {
    if (!quietOnly && QUIET_WORDS.has(token)) return -1;
    const known = words.indexOf(token);
    if (known >= 0) return known;
    words.push(token);
    return words.length - 1;
  });
  const covering = (start: number, end: number) => [
    ...new Set(wordOf.slice(start, end).filter((index) => index >= 0)),
  ];

  const joins = new Map<string, number[]>();
  for (let size = 2; size <= MAX_JOINED; size++) {
    for (let start = 0; start + size <= tokens.length; start++) {
      const covers = covering(start, start + size);
      if (covers.length > 0) joins.set(tokens.slice(start, start + size).join(''), covers);
    }
  }
  const groups = synonyms
    .spans(tokens)
    .map(({ group, start, end }) => ({ group, covers: covering(start, end) }))
    .filter(({ covers }) => covers.length > 0);

  const synonymKeys = [...new Set(groups.map(({ group }) => group))].flatMap((group) =>
    (synonyms.groups[group] ?? []).flatMap((phrase, index) =>
      !phrase.includes(' ') && words.some((word) => phrase.startsWith(word))
        ? []
        : SYNONYM_PLACE_LETTERS.map((place) => synonymKey(group, index, place)),
    ),
  );
  return {
    exactName: compact(text),
    words,
    joins: [...joins].map(([joined, covers]) => ({ text: joined, covers })),
    groups,
    synonymKeys,
  };
}

/**
 * The words typos are allowed in (docs/api.md#search) with two neighbouring letters swapped, a swap
 * being one edit: `once`, each swap; `twice`, two swaps, for the words allowed two edits.
 */
export function swappedWords(plan: SearchPlan): { once: string[]; twice: string[] } {
  const once = new Set<string>();
  const twice = new Set<string>();
  for (const word of plan.words) {
    const edits = maxEdits(word);
    if (edits === 0) continue;
    for (const variant of adjacentSwaps(word)) {
      once.add(variant);
      if (edits === 2) for (const again of adjacentSwaps(variant)) twice.add(again);
    }
  }
  for (const word of [...plan.words, ...once]) twice.delete(word);
  for (const word of plan.words) once.delete(word);
  return { once: [...once], twice: [...twice] };
}
