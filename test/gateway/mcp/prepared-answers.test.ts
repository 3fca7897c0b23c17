import type { CachedAnswer } from '../../../services/gateway/src/proxy/cache/response-cache';
import { PreparedAnswers, withId } from '../../../services/gateway/src/mcp/prepared-answers';

const TYPE = 'application/json';
const answerText = (id: unknown) =>
  `{"result":{"tools":[{"name":"search_tools"}]},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;

/**
 * The SDK's answers kept for reuse: given again with any id, byte for byte what the SDK writes
 * for that id; a buffer lent to an answer is not given to another before the first is written.
 */
describe('prepared answers', () => {
  test('an answer kept for one id is, for any other id, what the SDK would write', () => {
    const answers = new PreparedAnswers();
    answers.keepList('tools/list', TYPE, answerText(7), 7);
    const kept = answers.list('tools/list')!;
    for (const id of [0, 1, 42, 'a-string id', 'é', 12345678901234]) {
      const { bytes, written } = withId(kept, id);
      expect([id, bytes.toString()]).toEqual([id, answerText(id)]);
      written?.();
    }
    // An id longer than a buffer's room gets a buffer of its own, and the same bytes.
    const long = 'x'.repeat(200);
    const alone = withId(kept, long);
    expect([alone.bytes.toString(), alone.written]).toEqual([answerText(long), undefined]);
  });

  test('answers being written at once never share a buffer; a written one is reused', () => {
    const answers = new PreparedAnswers();
    answers.keepList('k', TYPE, answerText(1), 1);
    const kept = answers.list('k')!;
    const first = withId(kept, 1111);
    const second = withId(kept, 2);
    // The second answer did not overwrite the first's id: both are still whole.
    expect([first.bytes.toString(), second.bytes.toString()]).toEqual([
      answerText(1111),
      answerText(2),
    ]);
    expect(first.bytes.buffer).not.toBe(second.bytes.buffer);
    first.written!();
    const third = withId(kept, 3);
    expect(third.bytes.buffer).toBe(first.bytes.buffer);
    expect(third.bytes.toString()).toBe(answerText(3));
  });

  test('an answer not laid out as the SDK lays one out (its id last) is not kept', () => {
    const answers = new PreparedAnswers();
    answers.keepList('odd', TYPE, '{"jsonrpc":"2.0","id":5,"result":{}}', 5);
    answers.keepList('other id', TYPE, answerText(6), 5);
    expect([answers.list('odd'), answers.list('other id')]).toEqual([undefined, undefined]);
  });

  test("a tool's result is kept per cache entry and exchange, a few exchanges per entry", () => {
    const answers = new PreparedAnswers();
    const entry = { body: Buffer.from('{}') } as CachedAnswer;
    const newer = { body: Buffer.from('{}') } as CachedAnswer;
    for (let i = 0; i < 10; i++) answers.keepResult(entry, `exchange ${i}`, TYPE, answerText(1), 1);
    const kept = Array.from({ length: 10 }, (_, i) => answers.result(entry, `exchange ${i}`));
    expect(kept.filter((answer) => answer !== undefined)).toHaveLength(4);
    // A newer catalog answer is another entry: nothing kept for it until the SDK answers.
    expect(answers.result(newer, 'exchange 0')).toBeUndefined();
  });
});
