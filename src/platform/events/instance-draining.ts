/**
 * Emitted on this instance's own event emitter (never stored, never sent to other instances) when it begins to stop:
 * what holds a client waiting (long polls, event streams) answers now, so the client comes back through the load
 * balancer to an instance that stays.
 */
export const INSTANCE_DRAINING = 'instance.draining';
