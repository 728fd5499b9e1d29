import { EventLog } from '../../../platform/events';
import { StepMoved } from '../computers.repository';

/**
 * A step started or finished, whoever ran it (an instance of the server or a worker): its computer's
 * `computer.status_changed`, in the same transaction.
 */
export function stepMovedEvents(events: EventLog): StepMoved {
  return (manager, { computer, step, from }) => {
    events.raise(manager, {
      type: 'computer.status_changed',
      organizationId: computer.organizationId,
      actor: { kind: 'system' },
      data: {
        computerId: computer.id,
        provider: computer.provider,
        from,
        to: computer.status,
        step: { stepId: step.stepId, status: step.status, error: step.error ?? null },
      },
    });
  };
}
