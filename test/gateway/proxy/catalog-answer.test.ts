import { once } from 'node:events';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { AnswerReader, BUFFERED_BYTES } from '../../../services/gateway/src/proxy/catalog-answer';

const SMALL = JSON.stringify({ data: ['a', 'b'] });
/**
 * Bigger than the buffered limit, sent in 64 KiB chunks without a length (chunked); bigger too
 * than what loopback socket buffers hold, so a reader that stops is seen by the server.
 */
const CHUNK = Buffer.alloc(64 * 1024, 'x');
const BIG_CHUNKS = Math.ceil((16 * BUFFERED_BYTES) / CHUNK.length);

let server: Server;
let pool: Pool;
/** Resolves when the server's answer of the big stream was cut off by the client. */
let bigClosedEarly: Promise<boolean>;

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/small') {
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(SMALL),
        etag: '"v1"',
      });
      response.end(SMALL);
      return;
    }
    if (request.url === '/reset') {
      request.socket.destroy();
      return;
    }
    let sent = 0;
    bigClosedEarly = new Promise((resolve) =>
      response.on('close', () => resolve(sent < BIG_CHUNKS)),
    );
    response.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const more = () => {
      while (sent < BIG_CHUNKS) {
        sent += 1;
        if (!response.write(CHUNK)) return void response.once('drain', more);
      }
      response.end();
    };
    more();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterAll(async () => {
  await pool.close();
  server.close();
});

function get(path: string, head = false) {
  const reader = new AnswerReader(head);
  pool.dispatch({ method: head ? 'HEAD' : 'GET', path }, reader);
  return reader;
}

describe('a catalog answer read over undici dispatch', () => {
  it('hands a small answer over whole, as bytes, with its status and headers', async () => {
    const answer = await get('/small').answer;
    expect(answer.statusCode).toBe(200);
    expect(answer.headers).toMatchObject({ 'content-type': 'application/json', etag: '"v1"' });
    expect(Buffer.isBuffer(answer.body)).toBe(true);
    expect(answer.body.toString()).toBe(SMALL);
  });

  it('streams a HEAD answer, whose length is not its body', async () => {
    const answer = await get('/small', true).answer;
    expect(answer.body).toBeInstanceOf(Readable);
    expect((await buffer(answer.body as Readable)).length).toBe(0);
    expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(SMALL)));
  });

  it('streams an answer without a known small length, every byte, read slowly', async () => {
    const answer = await get('/big').answer;
    expect(answer.body).toBeInstanceOf(Readable);
    let bytes = 0;
    for await (const chunk of answer.body as Readable) {
      bytes += (chunk as Buffer).length;
      // A slow reader: the connection is paused meanwhile, nothing is lost.
      if (bytes < 4 * CHUNK.length) await sleep(5);
    }
    expect(bytes).toBe(BIG_CHUNKS * CHUNK.length);
    expect(await bigClosedEarly).toBe(false);
  });

  it('aborts the call when its stream is destroyed before the end (a client gone)', async () => {
    const answer = await get('/big').answer;
    const body = answer.body as Readable;
    await once(body, 'readable');
    body.destroy();
    expect(await bigClosedEarly).toBe(true);
  });

  it('says whether a failure came before the answer began, the only one sent again', async () => {
    const reader = get('/reset');
    await expect(reader.answer).rejects.toMatchObject({ code: expect.any(String) });
    expect(reader.started).toBe(false);
  });
});
