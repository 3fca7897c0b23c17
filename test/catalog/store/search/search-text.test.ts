import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { planSearch } from '../../../../services/catalog/src/store/search/search-plan';
import {
  SYNONYMS_FILE,
  Synonyms,
  bundledSynonyms,
  loadSynonyms,
} from '../../../../services/catalog/src/store/search/synonyms';
import {
  adjacentSwaps,
  compact,
  maxEdits,
  tokenize,
  withinEdits,
} from '../../../../services/catalog/src/store/search/text';
import { toolTerms } from '../../../../services/catalog/src/store/search/tool-terms';
import { dataset } from '../../../support/catalog';

describe('search text rules (docs/api.md#search)', () => {
  test('terms are lowercase letters and digits, accents dropped', () => {
    expect(tokenize('Leonardo.Ai — Café, GPT-4o & C++')).toEqual([
      'leonardo',
      'ai',
      'cafe',
      'gpt',
      '4o',
      'c',
    ]);
    expect(compact('Hugging Face')).toBe('huggingface');
    expect(compact('llama.cpp')).toBe(compact('LlamaCpp'));
  });

  test('typos allowed by word length: none under 5 letters, 1 up to 8, 2 from 9', () => {
    expect(['lang', 'agent', 'pinecone', 'langchain'].map(maxEdits)).toEqual([0, 1, 1, 2]);
  });

  test('a swap of two neighbouring letters is one edit, as are insertions, deletions, changes', () => {
    expect(withinEdits('pinceone', 'pinecone', 1)).toBe(true);
    expect(withinEdits('pincone', 'pinecone', 1)).toBe(true);
    expect(withinEdits('pineconee', 'pinecone', 1)).toBe(true);
    expect(withinEdits('pinecome', 'pinecone', 1)).toBe(true);
    expect(withinEdits('lnagchian', 'langchain', 2)).toBe(true);
    expect(withinEdits('pniceone', 'pinecone', 1)).toBe(false);
    expect(withinEdits('lnagchian', 'langchain', 1)).toBe(false);
    expect(withinEdits('abc', 'abc', 0)).toBe(true);
    expect(withinEdits('abc', 'abd', 0)).toBe(false);
    expect(adjacentSwaps('abca')).toEqual(['baca', 'acba', 'abac']);
    expect(adjacentSwaps('aab')).toEqual(['aba']);
  });
});

describe('a search plan', () => {
  const synonyms = bundledSynonyms();

  test('leaves out quiet words next to others, but joins them with their neighbours', () => {
    const plan = planSearch('Open AI tools', synonyms);
    expect(plan.words).toEqual(['open']);
    // "aitools" joins quiet words only: it would count for no word.
    expect(plan.joins.map((join) => join.text)).toEqual(['openai', 'openaitools']);
    expect(plan.exactName).toBe('openaitools');
    expect(planSearch('ai', synonyms).words).toEqual(['ai']);
  });

  test('knows the synonym groups of its phrases, and the words each covers', () => {
    const plan = planSearch('best text to speech', synonyms);
    const group = synonyms.groups.findIndex((phrases) => phrases.includes('text to speech'));
    expect(plan.groups).toContainEqual({
      group,
      covers: [plan.words.indexOf('text'), plan.words.indexOf('speech')],
    });
  });

  test('counts at most 20 words', () => {
    expect(planSearch('ab '.repeat(66) + 'zz', synonyms).words).toEqual(['ab']);
  });
});

describe('a tool’s terms', () => {
  const synonyms = new Synonyms([['tts', 'text to speech']]);
  const tool = {
    name: 'Hugging Face',
    category: 'Speech & Audio',
    tags: ['text-to-speech', 'api'],
    description: 'Turns text to speech. Also does other things, too many to count here.',
  };

  test('hold the name run together, multi-word tags and category run together, synonym keys', () => {
    const terms = toolTerms(tool, synonyms);
    expect(terms.nameCompact).toEqual(['huggingface']);
    expect(terms.phrases).toEqual(['texttospeech', 'speechaudio']);
    // The description's first 10 words are its lead; the rest stay in `description`.
    expect([...terms.lead, ...terms.description]).toEqual(tokenize(tool.description));
    expect(terms.lead).toHaveLength(10);
    // Phrase 1 of group 0 in a tag, in the description and in its lead; not in the name or
    // category.
    expect(terms.synonyms.sort()).toEqual(['~0.1d', '~0.1l', '~0.1t']);
  });
});

describe('data/synonyms.json', () => {
  const dir = () => mkdtempSync(path.join(tmpdir(), 'synonyms-'));
  const write = (content: unknown) => {
    const d = dir();
    writeFileSync(path.join(d, SYNONYMS_FILE), JSON.stringify(content));
    return d;
  };

  test('the bundled file loads, with the groups docs/api.md#search names', () => {
    const { groups } = bundledSynonyms();
    const together = (...phrases: string[]) =>
      groups.some((group) => phrases.every((p) => group.includes(p)));
    expect(together('llm', 'large language model')).toBe(true);
    expect(together('tts', 'text to speech')).toBe(true);
    expect(together('stt', 'asr', 'speech to text')).toBe(true);
    expect(together('rag', 'retrieval augmented generation')).toBe(true);
    expect(groups.length).toBeGreaterThanOrEqual(16);
  });

  test('each group reaches the catalog: one of its phrases is in some tool', () => {
    const synonyms = bundledSynonyms();
    const found = new Set(dataset.tools.flatMap((tool) => toolTerms(tool, synonyms).synonyms));
    const unused = synonyms.groups.filter(
      (_, group) => ![...found].some((key) => key.startsWith(`~${group}.`)),
    );
    expect(unused).toEqual([]);
  });

  test.each([
    [{ groups: [['tts']] }, '/groups/0'],
    [{ groups: [['TTS', 'text to speech']] }, '/groups/0/0'],
    [{ groups: [['tts', 'text  to speech']] }, '/groups/0/1'],
    [{ groups: [['tts', 'tts']] }, '/groups/0'],
    [{ groups: [['tts', 'a']], extra: 1 }, '/extra'],
  ])('a malformed file is refused, naming where: %j', (content, where) => {
    expect(() => loadSynonyms(write(content))).toThrow(`: ${where}: `);
  });

  test('a phrase in two groups is refused, naming it', () => {
    const content = {
      groups: [
        ['tts', 'speech'],
        ['stt', 'speech'],
      ],
    };
    expect(() => loadSynonyms(write(content))).toThrow('"speech" is in two synonym groups');
  });

  test('docs/dataset-format.md lists the same groups', () => {
    const doc = readFileSync(
      path.resolve(__dirname, '..', '..', '..', '..', 'docs', 'dataset-format.md'),
      'utf8',
    );
    const section = doc.slice(doc.indexOf('\n## Synonyms\n'));
    const listed = section
      .split('\n')
      .filter((line) => line.startsWith('- `'))
      .map((line) => [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    expect(listed).toEqual(bundledSynonyms().groups);
  });
});
