import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../config/app-config';
import { isUuid } from '../../platform/database/ids';
import { DomainEventBus } from '../../platform/events';
import { encodeCursor, decodeCursor } from '../../platform/http/cursor';
import { Page, toPage } from '../../platform/http/pagination';
import { FieldError, validationError } from '../../platform/http/validation';
import { SecretBox } from '../../platform/secrets/secret-box';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { OrganizationsService, Principal, securityActorOf } from '../auth';
import { looksMasked, maskApiKey } from './domain/api-key-mask';
import { EnterpriseControlsError, EnterpriseControlsErrorCode } from './domain/enterprise-controls.errors';
import { applyMergePatch, nulledPaths } from './domain/merge-patch';
import { checkModel, effectiveModelPolicy } from './domain/model-policy';
import { CustomModel, defaultSettings, EnterpriseSettings, SETTINGS_LIMITS } from './domain/settings';
import { diffSettings, maskSettings } from './domain/settings-diff';
import { normalizeSettingsUrls } from './domain/settings-urls';
import { ControlChangeView, ControlRevisionView, ControlsView, toChangeView } from './domain/views';
import { AGENT_POLICY_FIELDS, AgentPolicyView } from './domain/agent-policy';
import { EnterpriseControlsRepository } from './enterprise-controls.repository';
import { ControlRevisionEntity } from './entities';
import { SettingsRevisedEvent } from './events';
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
/** How long a relayed chat completion may take (models can think for minutes). */
const RELAY_TIMEOUT_MS = 600_000;

@Injectable()
export class EnterpriseControlsService {
  private readonly logger = new Logger(EnterpriseControlsService.name);
  private readonly cache: LRUCache<string, InForce> | null;

  constructor(
    private readonly repository: EnterpriseControlsRepository,
    private readonly box: SecretBox,
    private readonly organizations: OrganizationsService,
    private readonly events: DomainEventBus,
    config: AppConfig,
  ) {
    this.cache = config.CONTROLS_CACHE_MS > 0 ? new LRUCache({ max: 10_000, ttl: config.CONTROLS_CACHE_MS }) : null;
  }

  /**
   * What the other modules enforce. Reused for CONTROLS_CACHE_MS (default 1 s): a change through
   * this instance applies at once, one through another instance within that time.
   */
  async inForce(organizationId: string): Promise<InForce> {
    const cached = this.cache?.get(organizationId);
    if (cached) return cached;
    const latest = await this.repository.latest(organizationId);
    const inForce = { revision: latest?.revision ?? 0, settings: latest?.settings ?? defaultSettings() };
    this.cache?.set(organizationId, inForce);
    return inForce;
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
      return { row, diff };
    });
    if (diff.length === 0) return { controls: this.controlsView(organizationId, row), changed: false };
    this.cache?.delete(organizationId);
    const changedSettings = [...new Set(diff.map((operation) => operation.path.split('/')[1]))];
    this.events.publish(new SettingsRevisedEvent(organizationId, row!.createdAt, row!.revision, principal.userId, changedSettings));
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
      throw new EnterpriseControlsError(EnterpriseControlsErrorCode.RevisionNotFound, `Your organization's controls have no revision ${revision}.`, { revision });
    }
    return { ...toChangeView(row, this.masked(row.organizationId, row.settings)), diff: row.diff };
  }

  /** What an agent working for the caller must obey: the agent-side controls, the caller's model policy. */
  async agentPolicy(principal: Principal): Promise<AgentPolicyView> {
    const { revision, settings } = await this.inForce(principal.organizationId);
    const masked = this.masked(principal.organizationId, settings);
    const policy = Object.fromEntries(AGENT_POLICY_FIELDS.map((field) => [field, masked[field]])) as unknown as Omit<AgentPolicyView, 'revision'>;
    return { revision, ...policy, modelPolicy: effectiveModelPolicy(settings, principal.userId) };
  }

  /** The patched settings, checked whole; 400 naming every problem. `members`: the patch's user ids that are users of the organization. */
  private apply(before: EnterpriseSettings, patch: Record<string, unknown>, members: Set<string>): EnterpriseSettings {
    const after = structuredClone(applyMergePatch(before, patch)) as EnterpriseSettings;
    const nulled = nulledPaths(patch, 'settings');
    const problems = enterpriseControlsSchemas.problems('EnterpriseSettings', after).map(({ field, message }) => {
      const path = field === 'body' ? 'settings' : `settings.${field}`;
      return { field: path, message: message === 'is required' && nulled.has(path) ? 'is required; null would remove it, and only optional fields can be removed' : message };
    });
    if (problems.length > 0) throw validationError(problems);
    normalizeSettingsUrls(after);
    problems.push(...this.restoreMaskedKeys(after, before), ...duplicateModelIds(after), ...unknownUsers(after, before, members));
    const bytes = Buffer.byteLength(JSON.stringify(after));
    if (bytes > SETTINGS_LIMITS.snapshotBytes) {
      problems.push({ field: 'settings', message: `would take ${bytes} bytes as JSON; the limit is ${SETTINGS_LIMITS.snapshotBytes}` });
    }
    if (problems.length > 0) throw validationError(problems);
    return after;
  }

  /** A masked key sent back stands for the stored key of the same custom model. */
  private restoreMaskedKeys(after: EnterpriseSettings, before: EnterpriseSettings): FieldError[] {
    const problems: FieldError[] = [];
    after.customModels.forEach((model, index) => {
      if (model.apiKey === undefined || !looksMasked(model.apiKey)) return;
      const stored = before.customModels.find((candidate) => candidate.id === model.id)?.apiKey;
      if (stored !== undefined && maskApiKey(stored) === model.apiKey) {
        model.apiKey = stored;
        return;
      }
      problems.push({
        field: `settings.customModels[${index}].apiKey`,
        message:
          stored === undefined
            ? `is a masked value, and custom model "${model.id}" has no stored key to keep; send the key in full`
            : `is a masked value that is not the stored key's mask for custom model "${model.id}"; send the key in full, or the masked value as read`,
      });
    });
    return problems;
  }

  /**
   * Relays an OpenAI-compatible chat completion to one of the organization's custom models, so an
   * agent can use it without ever holding its key: the server adds the key (decrypted only here, in
   * memory), `extraHeaders`, `extraArgs` and `maxOutputTokens`, and sets `model`. The caller's model
   * policy applies. The vendor's status and body come back as they are.
   */
  async relayChatCompletion(principal: Principal, customModelId: string, body: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    const { settings } = await this.inForce(principal.organizationId);
    const model = settings.customModels.find((candidate) => candidate.id === customModelId);
    if (!model) {
      throw new EnterpriseControlsError(EnterpriseControlsErrorCode.CustomModelNotFound, `There is no custom model "${customModelId}" in your organization's controls.`, { customModelId });
    }
    const refusal = checkModel(settings, principal.userId, customModelId);
    if (refusal) throw new EnterpriseControlsError(EnterpriseControlsErrorCode.ModelNotAllowed, refusal.detail, { rule: refusal.rule, model: customModelId });
    const [revealed] = this.reveal(principal.organizationId, { ...settings, customModels: [model] }).customModels;
    const payload = {
      ...model.extraArgs,
      ...body,
      model: model.model,
      ...(model.maxOutputTokens !== undefined && body.max_tokens === undefined ? { max_tokens: model.maxOutputTokens } : {}),
    };
    let res: Response;
    try {
      res = await fetch(`${model.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(revealed.apiKey ? { authorization: `Bearer ${revealed.apiKey}` } : {}), ...model.extraHeaders },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(RELAY_TIMEOUT_MS),
      });
    } catch (error) {
      const reason = ((error as Error).cause as Error | undefined)?.message ?? (error as Error).message;
      throw new EnterpriseControlsError(EnterpriseControlsErrorCode.ModelUnreachable, `Custom model "${customModelId}" at ${model.baseUrl} could not be reached: ${reason}`, { customModelId });
    }
    // A vendor may quote the key back (an "invalid key" error): it leaves the server masked.
    const text = revealed.apiKey ? (await res.text()).split(revealed.apiKey).join(maskApiKey(revealed.apiKey)) : await res.text();
    let answer: unknown = text;
    try {
      answer = JSON.parse(text);
    } catch {
      // Not JSON: relayed as text.
    }
    return { status: res.status, body: answer };
  }

  private controlsView(organizationId: string, row: ControlRevisionEntity | null): ControlsView {
    if (!row) return { revision: 0, settings: defaultSettings(), user: null, updatedAt: null };
    return toChangeView(row, this.masked(organizationId, row.settings));
  }

  /** The stored settings with every key decrypted; only ever held in memory. 503 when a key cannot be decrypted. */
  private reveal(organizationId: string, sealed: EnterpriseSettings): EnterpriseSettings {
    return this.decryptKeys(organizationId, sealed, (model, error) => {
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.SecretUnreadable,
        `The stored key of custom model "${model.id}" cannot be decrypted with SECRETS_KEY; an operator must restore the key it was encrypted with.`,
        { reason: error.message },
      );
    });
  }

  /** Stored settings as answered: each key as its mask ("****" if it can no longer be decrypted, which is logged). */
  private masked(organizationId: string, sealed: EnterpriseSettings): EnterpriseSettings {
    return maskSettings(
      this.decryptKeys(organizationId, sealed, (model) => {
        this.logger.error({ organizationId, customModelId: model.id }, 'A custom model key cannot be decrypted with SECRETS_KEY');
        return '****';
      }),
    );
  }

  private decryptKeys(organizationId: string, sealed: EnterpriseSettings, unreadable: (model: CustomModel, error: Error) => string): EnterpriseSettings {
    return {
      ...sealed,
      customModels: sealed.customModels.map((model) => {
        if (model.apiKey === undefined) return model;
        try {
          return { ...model, apiKey: this.box.decrypt(model.apiKey, organizationId) };
        } catch (error) {
          return { ...model, apiKey: unreadable(model, error as Error) };
        }
      }),
    };
  }

  /** Keys encrypted for storage; a key that did not change keeps its envelope. */
  private seal(organizationId: string, plain: EnterpriseSettings, before: EnterpriseSettings, sealedBefore?: EnterpriseSettings): EnterpriseSettings {
    return {
      ...plain,
      customModels: plain.customModels.map((model) => {
        if (model.apiKey === undefined) return model;
        const index = before.customModels.findIndex((candidate) => candidate.id === model.id && candidate.apiKey === model.apiKey);
        const envelope = index >= 0 ? sealedBefore?.customModels[index]?.apiKey : undefined;
        return { ...model, apiKey: envelope ?? this.box.encrypt(model.apiKey, organizationId) };
      }),
    };
  }
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
  return [...mission, ...policies].filter((id): id is string => typeof id === 'string' && isUuid(id) && id === id.toLowerCase()).slice(0, SETTINGS_LIMITS.listItems + SETTINGS_LIMITS.mapEntries);
}

/** User ids newly named in the settings must be users of the organization (ids already there may be of users since removed). */
function unknownUsers(after: EnterpriseSettings, before: EnterpriseSettings, members: Set<string>): FieldError[] {
  const known = new Set([...before.missionPolicy.allowedUserIds, ...Object.keys(before.userModelPolicies)]);
  const unknown = (id: string) => !known.has(id) && !members.has(id);
  return [
    ...after.missionPolicy.allowedUserIds.flatMap((id, i) => (unknown(id) ? [{ field: `settings.missionPolicy.allowedUserIds[${i}]`, message: 'is not a user of your organization' }] : [])),
    ...Object.keys(after.userModelPolicies).flatMap((id) => (unknown(id) ? [{ field: `settings.userModelPolicies.${id}`, message: 'is not a user of your organization' }] : [])),
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
