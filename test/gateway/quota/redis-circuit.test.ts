import { RedisCircuit } from '../../../services/gateway/src/quota/redis-circuit';

/** The quota's circuit breaker on a fake clock: when it stops asking Redis, and when it asks again. */
describe('RedisCircuit', () => {
  let answers: boolean;
  let events: string[];
  let circuit: RedisCircuit;
  let start: number;

  beforeEach(() => {
    jest.useFakeTimers();
    start = Date.now();
    answers = false;
    events = [];
    circuit = new RedisCircuit({
      probe: async () => {
        events.push(`probe at ${Date.now() - start}`);
        if (!answers) throw new Error('Command timed out');
      },
      onOpen: () => events.push('open'),
      onClose: () => events.push('close'),
    });
  });
  afterEach(() => {
    circuit.stop();
    jest.useRealTimers();
  });

  const fail = (times: number) => {
    for (let i = 0; i < times; i++) circuit.failed(new Error('Command timed out'));
  };

  test('opens on the third failure in a row; an answer in between starts the count over', () => {
    fail(2);
    circuit.succeeded();
    fail(2);
    expect(circuit.open).toBe(false);
    fail(1);
    expect(circuit.open).toBe(true);
    fail(5);
    expect(events).toEqual(['open']);
  });

  test('probes after 1, 2, 4, 5 and 5 s while Redis does not answer; closes when it does', async () => {
    fail(3);
    await jest.advanceTimersByTimeAsync(17_000);
    expect(events).toEqual([
      'open',
      'probe at 1000',
      'probe at 3000',
      'probe at 7000',
      'probe at 12000',
      'probe at 17000',
    ]);
    expect(circuit.open).toBe(true);

    answers = true;
    await jest.advanceTimersByTimeAsync(5_000);
    expect(events.slice(-2)).toEqual(['probe at 22000', 'close']);
    expect(circuit.open).toBe(false);
  });

  test('the back-off starts over only once a quota command succeeds', async () => {
    fail(3);
    await jest.advanceTimersByTimeAsync(3_000); // probes at 1 and 3 s fail
    answers = true;
    await jest.advanceTimersByTimeAsync(4_000); // the probe at 7 s closes it
    // Redis answers PING but not the quota script: the next probe waits longer.
    fail(3);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(events.slice(-3)).toEqual(['open', 'probe at 12000', 'close']);

    circuit.succeeded();
    fail(3);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(events.slice(-3)).toEqual(['open', 'probe at 13000', 'close']);
  });

  test('a reconnection probes at once', async () => {
    fail(3);
    answers = true;
    circuit.probeNow();
    await jest.advanceTimersByTimeAsync(0);
    expect(events).toEqual(['open', 'probe at 0', 'close']);
    // Closed: nothing left to probe.
    await jest.advanceTimersByTimeAsync(10_000);
    expect(events).toHaveLength(3);
  });

  test('stopped, it probes no more', async () => {
    fail(3);
    circuit.stop();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(events).toEqual(['open']);
  });
});
