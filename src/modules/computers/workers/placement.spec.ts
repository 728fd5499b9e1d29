import { chooseWorker, WorkerRoom } from './placement';

const worker = (id: string, fields: Partial<WorkerRoom> = {}): WorkerRoom => ({
  id,
  poolId: 'pool-a',
  labels: [],
  room: 2,
  held: 0,
  registeredAt: new Date(1_000),
  ...fields,
});

describe('chooseWorker', () => {
  it('takes only a worker of the pool the computer names', () => {
    const workers = [worker('a1'), worker('b1', { poolId: 'pool-b' })];
    expect(chooseWorker({ id: 'c', poolId: 'pool-b', labels: [] }, workers)?.id).toBe('b1');
    expect(chooseWorker({ id: 'c', poolId: 'pool-c', labels: [] }, workers)).toBeNull();
  });

  it('takes a worker of any pool when the computer names none', () => {
    expect(chooseWorker({ id: 'c', poolId: null, labels: [] }, [worker('b1', { poolId: 'pool-b' })])?.id).toBe('b1');
  });

  it('needs every label the computer asks for', () => {
    const workers = [worker('gpu', { labels: ['gpu'] }), worker('both', { labels: ['gpu', 'arch=arm64'], held: 1 })];
    expect(chooseWorker({ id: 'c', poolId: null, labels: ['gpu', 'arch=arm64'] }, workers)?.id).toBe('both');
    expect(chooseWorker({ id: 'c', poolId: null, labels: ['tpu'] }, workers)).toBeNull();
  });

  it('never fills a worker past its room, whatever it held before', () => {
    const workers = [worker('full', { room: 2, held: 2 }), worker('over', { room: 1, held: 5 })];
    expect(chooseWorker({ id: 'c', poolId: null, labels: [] }, workers)).toBeNull();
  });

  it('spreads a batch over the least loaded, the longest registered first on a tie', () => {
    const workers = [
      worker('young', { registeredAt: new Date(2_000) }),
      worker('old', { registeredAt: new Date(1_000) }),
      worker('busy', { held: 1, registeredAt: new Date(500) }),
    ];
    const chosen = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'].map((id) => chooseWorker({ id, poolId: null, labels: [] }, workers)?.id ?? null);
    expect(chosen).toEqual(['old', 'young', 'busy', 'old', 'young', null, null]);
    expect(workers.map((w) => w.held)).toEqual([2, 2, 2]);
  });
});
