import { AllowedIps } from '../agent/sandbox/network-policy';
import type { OrganizationIps } from '../contract/address-policy';

/** An organization's `networkPolicy.allowedIps` from its settings or agent policy, as the sandbox's proxy applies it; null: no list. */
export function allowedIpsOf(policy: { networkPolicy?: unknown }): OrganizationIps | null {
  return AllowedIps.of(policy);
}

/** No address at all: what a sandbox reaches while its organization's policy cannot be read (fail closed). */
export const NO_ADDRESSES: OrganizationIps = { allows: () => false, entries: ["none while the organization's policy cannot be read"] };
