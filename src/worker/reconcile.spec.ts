import type { PlacedComputer } from '../contract/worker-channel';
import { planReconcile } from './reconcile';

const A = 'aaaaaaaa-0000-4000-8000-000000000001';
const B = 'bbbbbbbb-0000-4000-8000-000000000002';
const C = 'cccccccc-0000-4000-8000-000000000003';

const placed = (computerId: string, status: PlacedComputer['status'], tokenIssuedAt = 1000): PlacedComputer => ({ computerId, status, tokenIssuedAt });
const held = (more: { folders?: string[]; workspaces?: string[]; agents?: Array<[string, string]>; busy?: string[] } = {}) => ({
  folders: new Set(more.folders ?? more.workspaces ?? []),
  workspaces: new Set(more.workspaces ?? []),
  agents: new Map(more.agents ?? []),
  busy: new Set(more.busy ?? []),
});

describe('planReconcile', () => {
  it('removes the folders of computers no longer placed here, and kills their agents', () => {
    const plan = planReconcile(
      [placed(A, 'active')],
      held({
        workspaces: [A, B],
        agents: [
          [A, '1000'],
          [B, '1000'],
        ],
      }),
    );
    expect(plan).toEqual({ teardown: [B], retire: [{ computerId: B, signal: 'SIGKILL' }], start: [] });
  });

  it("keeps a computer's folders while one of its steps runs or was claimed after the answer was asked", () => {
    expect(planReconcile([], held({ workspaces: [A, B], busy: [A] })).teardown).toEqual([B]);
  });

  it('starts the agent of an active computer provisioned here, and only there', () => {
    const plan = planReconcile([placed(A, 'active'), placed(B, 'active'), placed(C, 'provisioning')], held({ workspaces: [A, C], folders: [A, B, C] }));
    expect(plan.start).toEqual([{ computerId: A, tokenIssuedAt: 1000, restart: false }]);
  });

  it('restarts an agent whose token was issued anew, and stops one whose computer is no longer active', () => {
    const plan = planReconcile(
      [placed(A, 'active', 2000), placed(B, 'error')],
      held({
        workspaces: [A, B],
        agents: [
          [A, '1000'],
          [B, '1000'],
        ],
      }),
    );
    expect(plan.start).toEqual([{ computerId: A, tokenIssuedAt: 2000, restart: true }]);
    expect(plan.retire).toEqual([{ computerId: B, signal: 'SIGTERM' }]);
    expect(plan.teardown).toEqual([]);
  });
});
