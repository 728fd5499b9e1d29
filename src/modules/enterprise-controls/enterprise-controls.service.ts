import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../config/app-config';
import { isUuid } from '../../platform/database/ids';
import { EventLog, OnDomainEvent, StoredEvent } from '../../platform/events';
import { encodeCursor, decodeCursor } from '../../platform/http/cursor';
import { Page, toPage } from '../../platform/http/pagination';
import { FieldError, validationError } from '../../platform/http/validation';
import { SecretBox } from '../../platform/secrets/secret-box';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { eventActorOf, OrganizationsService, Principal, securityActorOf } from '../auth';
import { extraHeaderProblems, restoreMaskedSecrets } from './domain/model-secrets';
import { mcpServerProblems, restoreMaskedMcpSecrets } from './domain/mcp-servers';
import { mapSettingsSecrets, SecretLocation, secretAtLocation } from './domain/settings-secrets';
import { EnterpriseControlsError, EnterpriseControlsErrorCode, revisionNotFound } from './domain/enterprise-controls.errors';
import { applyMergePatch, nulledPaths } from './domain/merge-patch';
import { effectiveModelPolicy } from './domain/model-policy';
import { defaultSettings, EnterpriseSettings, SETTINGS_LIMITS } from './domain/settings';
import { diffSettings, maskSettings } from './domain/settings-diff';
import { normalizeSettingsUrls } from './domain/settings-urls';
import { ControlChangeView, ControlRevisionView, ControlsView, toChangeView } from './domain/views';
import { noEffectWarnings } from '../../platform/http/no-effect';
import { NO_EFFECT_SETTINGS } from './domain/no-effect-settings';
import { agentPolicyOf, AgentPolicyView } from './domain/agent-policy';
import { EnterpriseControlsRepository, RetentionPolicy } from './enterprise-controls.repository';
import { ControlRevisionEntity } from './entities';
import { enterpriseControlsSchemas } from './schemas/enterprise-controls.schemas';

/** The controls in force for an organization, secrets still sealed: what enforcement reads. */
export interface InForce {
  revision: number;
  settings: EnterpriseSettings;
}

const HISTORY_LIST = 'enterprise-control-history';

/**
 * The organization's enterprise controls: a history of revisions, the latest in force. Changes
 * are JSON Merge Patches over the whole snapshot; each one that alters something becomes the next
 * revision, written with its diff in one insert, so nothing can be written and not applied.
 */
@Injectable()
export class EnterpriseControlsService {
  private readonly logger = new Logger(EnterpriseControlsService.name);
  private readonly cache: LRUCache<string, InForce> | null;

  constructor(
    private readonly repository: EnterpriseControlsRepository,
    private readonly box: SecretBox,
    private readonly organizations: OrganizationsService,
    private readonly events: EventLog,
    config: AppConfig,
  ) {
    this.cache =
      config.CONTROLS_CACHE_MS > 0
        ? new LRUCache({
            max: 10_000,
            ttl: config.CONTROLS_CACHE_MS,
            // The clock read once per 10 ms, not per request (lru-cache sets a timer each time it reads it).
            ttlResolution: 10,
            // One read per organization at a time: requests arriving while it runs wait for it.
            fetchMethod: (organizationId) => this.readInForce(organizationId),
            ignoreFetchAbort: true,
          })
        : null;
  }

  /**
   * What the other modules enforce. Reused for CONTROLS_CACHE_MS (default 1 s): a change through
   * this instance applies at once, one through another instance within that time.
   */
  async inForce(organizationId: string): Promise<InForce> {
    // A hit (nearly every request) skips fetch's promises.
    return (this.cache ? (this.cache.get(organizationId) ?? (await this.cache.fetch(organizationId))) : undefined) ?? this.readInForce(organizationId);
  }

  private async readInForce(organizationId: string): Promise<InForce> {
    const latest = await this.repository.latest(organizationId);
    return { revision: latest?.revision ?? 0, settings: latest?.settings ?? defaultSettings() };
  }

  /** Every organization whose controls set `sessionRetentionDays`, with the days (read fresh, not cached). */
  retentionPolicies(): Promise<RetentionPolicy[]> {
    return this.repository.retentionPolicies();
  }

  async current(principal: Principal): Promise<ControlsView> {
    const latest = await this.repository.latest(principal.organizationId);
    return this.controlsView(principal.organizationId, latest);
  }

  /**
   * Applies a merge patch on the revision in force, under the organization's lock, so concurrent
   * changes land one after the other as consecutive revisions. `expected` (from If-Match) lists
   * the revisions the caller accepts as the base; another answers 412.
   */
  async change(principal: Principal, patch: Record<string, unknown>, expected?: number[]): Promise<{ controls: ControlsView; changed: boolean }> {
    const organizationId = principal.organizationId;
    // Outside the transaction: on PGlite's one connection, Auth's query would wait for it.
    const members = await this.organizations.usersAmong(organizationId, userIdsNamedBy(patch));
    const { row, diff } = await this.repository.transaction(async (manager) => {
      await this.repository.lockOrganization(manager, organizationId);
      const latest = await this.repository.latest(organizationId, manager);
      const base = latest?.revision ?? 0;
      if (expected && !expected.includes(base)) throw mismatch(base, expected);
      const before = this.reveal(organizationId, latest?.settings ?? defaultSettings());
      const after = this.apply(before, patch, members);
      const diff = diffSettings(before, after);
      if (diff.length === 0) return { row: latest, diff };
      const row = Object.assign(new ControlRevisionEntity(), {
        organizationId,
        revision: base + 1,
        settings: this.seal(organizationId, after, before, latest?.settings),
        diff,
        userId: principal.userId,
        userEmail: principal.email,
        userName: principal.name,
        // Never before the previous revision, whatever the clocks of the instances.
        createdAt: latest && latest.createdAt.getTime() > Date.now() ? latest.createdAt : new Date(),
      });
      await this.repository.insert(manager, row);
      this.events.raise(manager, {
        type: 'controls.revised',
        organizationId,
        actor: eventActorOf(principal),
        data: { revision: row.revision, userId: principal.userId, changedSettings: changedSettingsOf(diff) },
      });
      return { row, diff };
    });
    if (diff.length === 0) return { controls: this.controlsView(organizationId, row), changed: false };
    this.cache?.delete(organizationId);
    const changedSettings = changedSettingsOf(diff);
    logSecurityEvent('controls.revised', securityActorOf(principal), { revision: row!.revision, changedSettings: changedSettings.join(',') });
    return { controls: this.controlsView(organizationId, row), changed: true };
  }

  async history(principal: Principal, cursor: string | undefined, limit: number): Promise<Page<ControlChangeView>> {
    const before = cursor === undefined ? undefined : (decodeCursor(HISTORY_LIST, cursor, ['number'])[0] as number);
    const rows = await this.repository.history(principal.organizationId, before, limit);
    const page = toPage(rows, limit, (row) => encodeCursor(HISTORY_LIST, [row.revision]));
    return { items: page.items.map((row) => toChangeView(row, this.masked(row.organizationId, row.settings))), pagination: page.pagination };
  }

  async revision(principal: Principal, revision: string): Promise<ControlRevisionView> {
    const number = /^[1-9][0-9]{0,9}$/.test(revision) ? Number(revision) : NaN;
    const row = Number.isSafeInteger(number) && number <= 2 ** 31 - 1 ? await this.repository.find(principal.organizationId, number) : null;
    if (!row) {
      throw revisionNotFound(revision);
    }
    return { ...toChangeView(row, this.masked(row.organizationId, row.settings)), diff: row.diff };
  }

  /** What an agent working for the caller must obey: the agent-side controls, the caller's model policy. */
  async agentPolicy(principal: Principal): Promise<AgentPolicyView> {
    const { revision, settings } = await this.inForce(principal.organizationId);
    const policy = agentPolicyOf(this.masked(principal.organizationId, settings), effectiveModelPolicy(settings, principal.userId), revision);
    const warnings = noEffectWarnings(policy, NO_EFFECT_SETTINGS);
    return { ...policy, ...(warnings.length > 0 ? { warnings } : {}) };
  }

  /** The patched settings, checked whole; 400 naming every problem. `members`: the patch's user ids that are users of the organization. */
  private apply(before: EnterpriseSettings, patch: Record<string, unknown>, members: Set<string>): EnterpriseSettings {
    const after = structuredClone(applyMergePatch(before, patch)) as EnterpriseSettings;
    const nulled = nulledPaths(patch, 'settings');
    const checked = enterpriseControlsSchemas.problems('EnterpriseSettings', after);
    const problems = checked.errors.map(({ field, message }) => {
      const path = field === 'body' ? 'settings' : `settings.${field}`;
      return {
        field: path,
        message: message === 'is required' && nulled.has(path) ? 'is required; null would remove it, and only optional fields can be removed' : message,
      };
    });
    if (checked.total > 0) throw validationError(problems, checked.total);
    normalizeSettingsUrls(after);
    problems.push(
      ...restoreMaskedSecrets(after.customModels, before.customModels),
      ...restoreMaskedMcpSecrets(after.mcpServers ?? [], before.mcpServers ?? []),
      ...extraHeaderProblems(after.customModels),
      ...mcpServerProblems(after),
      ...duplicateModelIds(after),
      ...unknownUsers(after, before, members),
    );
    const bytes = Buffer.byteLength(JSON.stringify(after));
    if (bytes > SETTINGS_LIMITS.snapshotBytes) {
      problems.push({ field: 'settings', message: `would take ${bytes} bytes as JSON; the limit is ${SETTINGS_LIMITS.snapshotBytes}` });
    }
    if (problems.length > 0) throw validationError(problems);
    return after;
  }

  /**
   * Encrypts the secrets that revisions written by earlier versions hold in plain text (header values
   * and cloud credentials; keys always were encrypted). Idempotent; run at start-up. Returns how many
   * revisions it sealed.
   */
  async sealPlainSecrets(): Promise<number> {
    let sealed = 0;
    const seen = new Set<string>();
    for (let batch = await this.repository.withPlainSecrets(100); batch.length > 0; batch = await this.repository.withPlainSecrets(100)) {
      // A row found again was not sealed by the pass before: stop rather than loop.
      if (batch.some((row) => seen.has(`${row.organizationId}/${row.revision}`))) break;
      for (const row of batch) {
        seen.add(`${row.organizationId}/${row.revision}`);
        const settings = mapSettingsSecrets(row.settings, (value) => (SecretBox.isEncrypted(value) ? value : this.box.encrypt(value, row.organizationId)));
        await this.repository.resealSettings(row.organizationId, row.revision, settings);
        sealed += 1;
      }
    }
    if (sealed > 0) this.logger.log({ revisions: sealed }, 'Encrypted custom-model secrets that earlier versions stored in plain text');
    this.cache?.clear();
    return sealed;
  }

  /** A revision made on any instance: this one's cached controls of the organization are stale. */
  @OnDomainEvent('controls.revised')
  forgetCached(event: StoredEvent<'controls.revised'>): void {
    this.cache?.delete(event.organizationId);
  }

  private controlsView(organizationId: string, row: ControlRevisionEntity | null): ControlsView {
    if (!row) return { revision: 0, settings: defaultSettings(), user: null, updatedAt: null };
    return toChangeView(row, this.masked(organizationId, row.settings));
  }

  /** The stored settings with every secret decrypted; only ever held in memory. 503 when one cannot be decrypted. */
  reveal(organizationId: string, sealed: EnterpriseSettings): EnterpriseSettings {
    return this.decryptSecrets(organizationId, sealed, (owner, error) => {
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.SecretUnreadable,
        `A stored secret of ${owner} cannot be decrypted with SECRETS_KEY; an operator must restore the key it was encrypted with.`,
        { reason: error.message },
      );
    });
  }

  /** Stored settings as answered: each secret as its mask ("****" if it can no longer be decrypted, which is logged). */
  private masked(organizationId: string, sealed: EnterpriseSettings): EnterpriseSettings {
    return maskSettings(
      this.decryptSecrets(organizationId, sealed, (owner) => {
        this.logger.error({ organizationId, owner }, 'A stored secret cannot be decrypted with SECRETS_KEY');
        return '****';
      }),
    );
  }

  /**
   * Values stored before header values and cloud credentials were encrypted are plain, and read as they are.
   * `unreadable` gets the secret's owner as answers name it (`custom model "team"`, `MCP server "github"`).
   */
  private decryptSecrets(organizationId: string, sealed: EnterpriseSettings, unreadable: (owner: string, error: Error) => string): EnterpriseSettings {
    return mapSettingsSecrets(sealed, (value, location) => {
      if (!SecretBox.isEncrypted(value)) return value;
      try {
        return this.box.decrypt(value, organizationId);
      } catch (error) {
        return unreadable(ownerOf(sealed, location), error as Error);
      }
    });
  }

  /**
   * Secrets encrypted for storage; one that did not change keeps its envelope (the same entry, by
   * custom model id or MCP server name, held the same value at the same place before).
   */
  private seal(organizationId: string, plain: EnterpriseSettings, before: EnterpriseSettings, sealedBefore?: EnterpriseSettings): EnterpriseSettings {
    return mapSettingsSecrets(plain, (value, location) => {
      const [list, , ...path] = location;
      const key = keyOf(secretHolder(plain, location));
      const entries = (before as unknown as Record<string, Array<{ id?: string; name?: string }> | undefined>)[list] ?? [];
      const at = entries.findIndex((candidate) => keyOf(candidate) === key && secretAtLocation(candidate, path) === value);
      const envelope = at >= 0 && sealedBefore ? secretAtLocation(sealedBefore, [list, String(at), ...path]) : undefined;
      return envelope !== undefined && SecretBox.isEncrypted(envelope) ? envelope : this.box.encrypt(value, organizationId);
    });
  }
}

/** The entry of `customModels` or `mcpServers` a secret belongs to. */
function secretHolder(settings: EnterpriseSettings, location: SecretLocation): { id?: string; name?: string } {
  const [list, index] = location;
  return (settings as unknown as Record<string, Array<{ id?: string; name?: string }>>)[list][Number(index)];
}

function keyOf(entry: { id?: string; name?: string }): string | undefined {
  return entry.id ?? entry.name;
}

/** Who holds the secret at `location`, as answers name it. */
function ownerOf(settings: EnterpriseSettings, location: SecretLocation): string {
  const holder = secretHolder(settings, location);
  return location[0] === 'mcpServers' ? `MCP server "${holder.name}"` : `custom model "${holder.id}"`;
}

/** The top-level settings a diff touches. */
function changedSettingsOf(diff: Array<{ path: string }>): string[] {
  return [...new Set(diff.map((operation) => operation.path.split('/')[1]))];
}

function mismatch(current: number, expected: number[]): EnterpriseControlsError {
  return new EnterpriseControlsError(
    EnterpriseControlsErrorCode.RevisionMismatch,
    `The controls are at revision ${current}, not ${expected.join(' or ')} as If-Match expects: someone changed them since you read them. Read them again and reapply your change.`,
    { currentRevision: current },
  );
}

/** The user ids a patch names (mission access, per-user model policies), to look up before the transaction. */
function userIdsNamedBy(patch: Record<string, unknown>): string[] {
  const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
  const mission = isObject(patch.missionPolicy) && Array.isArray(patch.missionPolicy.allowedUserIds) ? patch.missionPolicy.allowedUserIds : [];
  const policies = isObject(patch.userModelPolicies) ? Object.keys(patch.userModelPolicies) : [];
  return [...mission, ...policies]
    .filter((id): id is string => typeof id === 'string' && isUuid(id) && id === id.toLowerCase())
    .slice(0, SETTINGS_LIMITS.listItems + SETTINGS_LIMITS.mapEntries);
}

/** User ids newly named in the settings must be users of the organization (ids already there may be of users since removed). */
function unknownUsers(after: EnterpriseSettings, before: EnterpriseSettings, members: Set<string>): FieldError[] {
  const known = new Set([...before.missionPolicy.allowedUserIds, ...Object.keys(before.userModelPolicies)]);
  const unknown = (id: string) => !known.has(id) && !members.has(id);
  return [
    ...after.missionPolicy.allowedUserIds.flatMap((id, i) =>
      unknown(id) ? [{ field: `settings.missionPolicy.allowedUserIds[${i}]`, message: 'is not a user of your organization' }] : [],
    ),
    ...Object.keys(after.userModelPolicies).flatMap((id) =>
      unknown(id) ? [{ field: `settings.userModelPolicies.${id}`, message: 'is not a user of your organization' }] : [],
    ),
  ];
}

function duplicateModelIds(settings: EnterpriseSettings): FieldError[] {
  const first = new Map<string, number>();
  return settings.customModels.flatMap((model, index) => {
    const earlier = first.get(model.id);
    if (earlier === undefined) {
      first.set(model.id, index);
      return [];
    }
    return [{ field: `settings.customModels[${index}].id`, message: `duplicates customModels[${earlier}].id; custom model ids are unique` }];
  });
}
