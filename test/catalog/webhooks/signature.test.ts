import { Webhook } from 'standardwebhooks';
import { eventBody, signedHeaders } from '../../../services/catalog/src/webhooks/signature';
import type { WebhookEvent } from '../../../services/catalog/src/webhooks/webhook-types';
import { newSecret } from '../../support/webhook-receiver';

const event: WebhookEvent = {
  id: 'evt_42_wh_1',
  type: 'tool.updated',
  timestamp: '2026-01-02T03:04:05.000Z',
  data: { slug: 'langchain', name: 'LangChain', changedFields: ['description'] },
};

describe('Standard Webhooks signing (docs/api.md#webhook-events-and-deliveries)', () => {
  test('the body is {type, timestamp, data}, in that order, nothing else', () => {
    expect(eventBody({ ...event })).toBe(
      '{"type":"tool.updated","timestamp":"2026-01-02T03:04:05.000Z",' +
        '"data":{"slug":"langchain","name":"LangChain","changedFields":["description"]}}',
    );
  });

  test('the standardwebhooks library verifies what is signed, and the headers carry id and time', () => {
    const secret = newSecret();
    const body = eventBody(event);
    const at = new Date();
    const headers = signedHeaders(secret, event.id, body, at);
    expect(headers['webhook-id']).toBe(event.id);
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  test('another secret, another body or another id does not verify', () => {
    const secret = newSecret();
    const body = eventBody(event);
    const headers = signedHeaders(secret, event.id, body, new Date());
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('LangChain', 'Lang'), headers)).toThrow();
    expect(() =>
      new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'evt_other' }),
    ).toThrow();
  });
});
