import { defaultAgentPolicy } from '../../../contract/default-policy';
import { enterpriseControlsSchemas } from '../schemas/enterprise-controls.schemas';
import { AGENT_POLICY_FIELDS, agentPolicyOf } from './agent-policy';
import { effectiveModelPolicy } from './model-policy';
import { defaultSettings, EnterpriseSettings } from './settings';

describe('the agent policy made of settings', () => {
  it('at the open defaults is what a headless run without a server obeys, and the AgentPolicy schema accepts it', () => {
    const settings = defaultSettings();
    const served = agentPolicyOf(settings, effectiveModelPolicy(settings, 'a-user'), 0);
    expect(defaultAgentPolicy()).toEqual(served);
    expect(enterpriseControlsSchemas.problems('AgentPolicy', defaultAgentPolicy()).errors).toEqual([]);
  });

  it("carries the fields agents obey, the caller's model policy, no MCP servers when none are set, and toolApproval only when set", () => {
    const settings: EnterpriseSettings = { ...defaultSettings(), commandDenylist: ['rm'], restrictMemberVisibility: true, sessionRetentionDays: 30 };
    const modelPolicy = { ...settings.modelPolicy, blockedModelIds: ['m-1'] };
    const policy = agentPolicyOf(settings, modelPolicy, 7);
    expect(Object.keys(policy).sort()).toEqual(['revision', 'modelPolicy', ...AGENT_POLICY_FIELDS].sort());
    expect(policy).toMatchObject({ revision: 7, commandDenylist: ['rm'], modelPolicy, mcpServers: [] });
    expect(policy).not.toHaveProperty('toolApproval');
    expect(agentPolicyOf({ ...settings, toolApproval: { tools: ['Execute'] } }, modelPolicy, 7).toolApproval).toEqual({ tools: ['Execute'] });
  });
});
