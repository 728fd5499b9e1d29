import { Metrics } from './metrics';

describe('Metrics', () => {
  it('a gauge read at scrape time whose read fails keeps its last value, and the scrape still answers with the rest', async () => {
    const metrics = new Metrics();
    let failing = false;
    metrics.gauge({
      name: 'test_queue',
      help: 'A figure read from the database.',
      labelNames: ['status'] as const,
      read: async () => {
        if (failing) throw new Error('the database does not answer');
        return [{ labels: { status: 'pending' }, value: 7 }];
      },
    });
    metrics.gauge({ name: 'test_open', help: 'A figure in memory.', read: () => 3 });

    expect((await metrics.exposition()).body).toContain('agent_platform_test_queue{status="pending"} 7');
    failing = true;
    const { body } = await metrics.exposition();
    expect(body).toContain('agent_platform_test_queue{status="pending"} 7');
    expect(body).toContain('agent_platform_test_open 3');
  });
});
