import { connect } from 'node:net';

/**
 * One raw HTTP/1.1 exchange, for requests `fetch` cannot send (absolute-form targets, missing
 * Host, oversized headers, CONNECT): the status and the body of the final response, read until
 * the server closes or `Connection: close` ends it.
 */
export async function rawRequest(
  port: number,
  request: string,
): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const blocks = text.split('\r\n\r\n');
      // Interim answers (100 Continue) come first; the final one follows.
      while (/^HTTP\/1\.1 1\d\d /.test(blocks[0] ?? '')) blocks.shift();
      const [headers = '', ...rest] = blocks;
      resolve({ status: Number(headers.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}
