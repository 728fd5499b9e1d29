import { ApiKeyEntity, OrganizationEntity, UserEntity } from './modules/auth/entities';
import { Foundation1763712000000 } from './migrations/1763712000000-Foundation';
import { Sessions1763798400000 } from './migrations/1763798400000-Sessions';
import { Computers1763884800000 } from './migrations/1763884800000-Computers';
import { MessageEntity, SessionEntity, TokenUsageDailyEntity } from './modules/sessions/entities';
import { AgentPresenceEntity, ToolApprovalEntity } from './modules/agent-channel/entities';
import { ComputerEntity, ProvisioningStepEntity, WorkerEnrollmentTokenEntity, WorkerEntity, WorkerPoolEntity } from './modules/computers/entities';
import { EnterpriseControls1763971200000 } from './migrations/1763971200000-EnterpriseControls';
import { ControlRevisionEntity, McpOAuthConnectionEntity } from './modules/enterprise-controls/entities';
import { Readiness1764057600000 } from './migrations/1764057600000-Readiness';
import { ReadinessReportEntity } from './modules/readiness/entities';
import { Analytics1764144000000 } from './migrations/1764144000000-Analytics';
import { LocalAgentTokens1764230400000 } from './migrations/1764230400000-LocalAgentTokens';
import {
  AnalyticsDayEntity,
  AnalyticsDirtyDayEntity,
  AnalyticsFactEntity,
  AnalyticsRollupStateEntity,
  AnalyticsUserDayEntity,
} from './modules/analytics/entities';
import { IdempotencyKeyEntity } from './platform/idempotency/idempotency-key.entity';
import { RateLimits1764316800000 } from './migrations/1764316800000-RateLimits';
import { MessageSizes1764403200000 } from './migrations/1764403200000-MessageSizes';
import { UserKinds1764489600000 } from './migrations/1764489600000-UserKinds';
import { AgentPresence1764490000000 } from './migrations/1764490000000-AgentPresence';
import { UserRemoval1764576000000 } from './migrations/1764576000000-UserRemoval';
import { EventLog1764662400000 } from './migrations/1764662400000-EventLog';
import { Webhooks1764750000000 } from './migrations/1764750000000-Webhooks';
import { HumanInTheLoop1764752400000 } from './migrations/1764752400000-HumanInTheLoop';
import { EventSequencer1764838800000 } from './migrations/1764838800000-EventSequencer';
import { AuditActorIndex1764846000000 } from './migrations/1764846000000-AuditActorIndex';
import { WebhookPauses1764932400000 } from './migrations/1764932400000-WebhookPauses';
import { ListIndexes1765018800000 } from './migrations/1765018800000-ListIndexes';
import { RollupSnapshot1765105200000 } from './migrations/1765105200000-RollupSnapshot';
import { TenantKeys1765191600000 } from './migrations/1765191600000-TenantKeys';
import { TokenDays1765278000000 } from './migrations/1765278000000-TokenDays';
import { PluginCatalogs1765450800000 } from './migrations/1765450800000-PluginCatalogs';
import { McpOAuth1765537200000 } from './migrations/1765537200000-McpOAuth';
import { HotSessionRows1765623600000 } from './migrations/1765623600000-HotSessionRows';
import { NumberedEventIndexes1765710000000 } from './migrations/1765710000000-NumberedEventIndexes';
import { WorkerPools1765796400000 } from './migrations/1765796400000-WorkerPools';
import { WorkerPlacement1765882800000 } from './migrations/1765882800000-WorkerPlacement';
import { PluginCatalogEntity } from './modules/enterprise-controls/plugin-catalog/plugin-catalog.entity';
import { RateLimitWindowEntity } from './platform/rate-limit/rate-limit-window.entity';

/** Every entity and migration of the platform; modules add theirs here. */
export const entities = [
  OrganizationEntity,
  UserEntity,
  ApiKeyEntity,
  IdempotencyKeyEntity,
  SessionEntity,
  MessageEntity,
  TokenUsageDailyEntity,
  ComputerEntity,
  ProvisioningStepEntity,
  WorkerPoolEntity,
  WorkerEnrollmentTokenEntity,
  WorkerEntity,
  ControlRevisionEntity,
  PluginCatalogEntity,
  McpOAuthConnectionEntity,
  ReadinessReportEntity,
  AnalyticsFactEntity,
  AnalyticsUserDayEntity,
  AnalyticsDayEntity,
  AnalyticsDirtyDayEntity,
  AnalyticsRollupStateEntity,
  RateLimitWindowEntity,
  AgentPresenceEntity,
  ToolApprovalEntity,
];
export const migrations = [
  Foundation1763712000000,
  Sessions1763798400000,
  Computers1763884800000,
  EnterpriseControls1763971200000,
  Readiness1764057600000,
  Analytics1764144000000,
  LocalAgentTokens1764230400000,
  RateLimits1764316800000,
  MessageSizes1764403200000,
  UserKinds1764489600000,
  AgentPresence1764490000000,
  UserRemoval1764576000000,
  EventLog1764662400000,
  Webhooks1764750000000,
  HumanInTheLoop1764752400000,
  EventSequencer1764838800000,
  AuditActorIndex1764846000000,
  WebhookPauses1764932400000,
  ListIndexes1765018800000,
  RollupSnapshot1765105200000,
  TenantKeys1765191600000,
  TokenDays1765278000000,
  PluginCatalogs1765450800000,
  McpOAuth1765537200000,
  HotSessionRows1765623600000,
  NumberedEventIndexes1765710000000,
  WorkerPools1765796400000,
  WorkerPlacement1765882800000,
];
