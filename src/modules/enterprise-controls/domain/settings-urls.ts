import { checkUrl, HTTP_BASE_URL } from '../../../contract/urls';
import { EnterpriseSettings } from './settings';

/** The stored form of a URL the schema accepted (`http-base-url`); a value it did not accept is left for it to refuse. */
function normalized(value: string): string {
  const verdict = checkUrl(value, HTTP_BASE_URL);
  return verdict.ok ? verdict.href : value;
}

/**
 * Rewrites every URL of the settings in its normalized form, in place: custom models' `baseUrl`
 * and `cloudModelConfig.cloudBaseUrl`, MCP servers' `url`, and `allowedBaseUrls` of the model policy and of every
 * user's. Run once, on the checked snapshot about to be stored, so answers show what was stored.
 */
export function normalizeSettingsUrls(settings: EnterpriseSettings): void {
  for (const model of settings.customModels) {
    model.baseUrl = normalized(model.baseUrl);
    if (model.cloudModelConfig?.cloudBaseUrl !== undefined) model.cloudModelConfig.cloudBaseUrl = normalized(model.cloudModelConfig.cloudBaseUrl);
  }
  for (const server of settings.mcpServers ?? []) if (server.transport === 'http') server.url = normalized(server.url);
  settings.modelPolicy.allowedBaseUrls = settings.modelPolicy.allowedBaseUrls.map(normalized);
  for (const policy of Object.values(settings.userModelPolicies)) {
    if (policy.allowedBaseUrls) policy.allowedBaseUrls = policy.allowedBaseUrls.map(normalized);
  }
}
