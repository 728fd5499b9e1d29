import type { OrganizationFeatures } from '../entities/organization.entity';
import { Role } from './role';

/** Who is calling: API keys and JWTs both resolve to this. */
export interface Principal {
  userId: string;
  organizationId: string;
  role: Role;
  email: string;
  name: string;
  credential: { kind: 'api_key'; apiKeyId: string } | { kind: 'jwt' };
  /** The organization's feature flags, read with the credential (no extra query per request). */
  features: OrganizationFeatures;
}
