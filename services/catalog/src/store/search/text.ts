/**
 * The text rules every search engine here shares: how text becomes terms, how words written
 * apart become one, and how far a typo may go (docs/api.md#search).
 */

/** Lowercase words without accents, split at anything that is not a letter or a digit. */
export function tokenize(text: string): string[] {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Words run together: "Hugging Face" and "hugging-face" both become "huggingface". */
export function compact(text: string): string {
  return tokenize(text).join('');
}

/**
 * Edits a typo in a query word may have (docs/api.md#search): none under 5 characters (those match
 * exactly or as a prefix only), one from 5 to 8, two from 9.
 */
export function maxEdits(word: string): number {
  return word.length >= 9 ? 2 : word.length >= 5 ? 1 : 0;
}

/** The word with two neighbouring letters swapped, each way it can be ("lnag" -> "lang", ...). */
export function adjacentSwaps(word: string): string[] {
  const variants = new Set<string>();
  for (let i = 0; i + 1 < word.length; i++) {
    if (word[i] === word[i + 1]) continue;
    variants.add(word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2));
  }
  return [...variants];
}

/**
 * Whether `a` becomes `b` in at most `max` edits, an edit being an insertion, a deletion, a
 * substitution or a swap of two neighbouring characters (optimal string alignment distance).
 * None of the installed edit-distance packages counts a swap as one edit.
 */
export function withinEdits(a: string, b: string, max: number): boolean {
  if (Math.abs(a.length - b.length) > max) return false;
  if (a === b) return true;
  if (max === 0) return false;
  const width = b.length + 1;
  let before = new Uint16Array(width);
  let previous = Uint16Array.from({ length: width }, (_, j) => j);
  let current = new Uint16Array(width);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, before[j - 2]! + 1);
      }
      current[j] = distance;
      if (distance < rowMin) rowMin = distance;
    }
    if (rowMin > max) return false;
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]! <= max;
}
