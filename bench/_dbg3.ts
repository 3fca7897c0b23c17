import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { Synonyms } from '../services/catalog/src/store/search/synonyms';
import { newTool } from '../test/support/catalog';
const plain = { category: 'Other Things', tags: ['api'], description: 'A product for people.' };
const tool = (slug: string, o: any) => newTool({ ...plain, ...o, slug, name: o.name ?? slug });
const tools = [
    tool('tts-tag', { tags: ['text-to-speech'] }),
    tool('stt-tag', { tags: ['speech-to-text'] }),
    tool('tts-description', { description: 'Reads text to speech for you.' }),
    tool('llm-tag', { tags: ['llm'] }),
  ];
for (const syn of [new Synonyms([['tts', 'text to speech'], ['llm', 'large language model']]), new Synonyms([])]) {
  const r = CatalogSnapshot.build(tools, 1, syn).search({ text: 'tts', limit: 10 });
  console.log(r.items.map((t) => [t.slug, t.name, t.score]));
}
