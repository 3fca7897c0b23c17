import type { ToolRecord } from '../services/catalog/src/schemas/tool';

/**
 * A synthetic catalog for the search scale figures (`npm run bench -- search`): the real tools,
 * then made-up ones until `size`, each a copy of a real tool under a made-up name (its own name
 * replaced wherever its texts say it). Tags,
 * categories and descriptions keep the real catalog's words and their proportions, so a query
 * matches about the same share of the catalog at any size. Deterministic: the same size gives
 * the same catalog.
 */

const SYLLABLES = [
  'zor', 'vex', 'qua', 'niv', 'lum', 'tra', 'kel', 'dor', 'pix', 'mon', 'sar', 'bel', 'fin',
  'gro', 'hal', 'jun', 'wex', 'yal', 'cru', 'pem', 'tov', 'rix', 'sol', 'nak',
]; // prettier-ignore

/** A small linear congruential generator: reproducible figures from run to run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const capitalized = (word: string) => word[0]!.toUpperCase() + word.slice(1);

export function syntheticCatalog<T extends ToolRecord>(real: readonly T[], size: number): T[] {
  const next = random(size);
  const pick = () => SYLLABLES[Math.floor(next() * SYLLABLES.length)]!;
  const tools = [...real];
  const names = new Set(real.map((tool) => tool.name.toLowerCase()));
  for (let i = real.length; i < size; i++) {
    const base = real[i % real.length]!;
    let name = `${capitalized(pick() + pick())} ${capitalized(pick() + pick())}`;
    if (names.has(name.toLowerCase())) name = `${name} ${i}`;
    names.add(name.toLowerCase());
    const renamed = (text: string) => text.split(base.name).join(name);
    tools.push({
      ...base,
      name,
      slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
      description: renamed(base.description),
      longDescription: renamed(base.longDescription),
      gettingStarted: renamed(base.gettingStarted),
    });
  }
  return tools;
}
