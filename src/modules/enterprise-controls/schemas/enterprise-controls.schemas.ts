import { closedObject, NO_CONTROL_CHARACTERS, ref, SchemaObject, SchemaRegistry, SECRET_KEYWORD } from '../../../platform/http/json-schema';
import { AGENT_POLICY_FIELDS } from '../domain/agent-policy';
import {
  CLOUD_MODEL_CONFIG_FIELDS,
  CODE_HOSTS,
  CUSTOM_MODEL_PROVIDERS,
  defaultSettings,
  MCP_AUTONOMY_LEVELS,
  MCP_SERVER_NAME,
  SETTINGS_LIMITS,
} from '../domain/settings';
import { pageOf, pageQuery } from '../../../platform/http/pagination';
import { markNoEffect, SETTING_WARNINGS_SCHEMA } from '../../../platform/http/no-effect';
import { NO_EFFECT_SETTINGS } from '../domain/no-effect-settings';

const L = SETTINGS_LIMITS;
const closed = closedObject;
/** 1-65535, without leading zeros. */
const PORT_NUMBER = '(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})';
const bool = (description?: string): SchemaObject => ({ type: 'boolean', ...(description ? { description } : {}) });

/** One line of text: not blank, no control characters, at most `max` characters. */
const text = (max: number = L.string, description?: string): SchemaObject => ({
  type: 'string',
  minLength: 1,
  maxLength: max,
  allOf: [{ pattern: NO_CONTROL_CHARACTERS }, { pattern: '\\S' }],
  ...(description ? { description } : {}),
});
/** Free text (guidance): may span lines, may be empty. */
const prose = (description: string): SchemaObject => ({ type: 'string', maxLength: L.guidance, description });
const list = (items: SchemaObject, description: string, maxItems: number = L.listItems): SchemaObject => ({
  type: 'array',
  maxItems,
  items,
  description: `${description} At most ${maxItems} entries.`,
});
const mapKey: SchemaObject = { minLength: 1, maxLength: 256, pattern: NO_CONTROL_CHARACTERS };
const map = (values: SchemaObject, description: string, keys: SchemaObject = mapKey, maxEntries: number = L.mapEntries): SchemaObject => ({
  type: 'object',
  maxProperties: maxEntries,
  propertyNames: keys,
  additionalProperties: values,
  description: `${description} At most ${maxEntries} entries; keys 1-256 characters.`,
});
/** Checked by the shared URL checker (src/contract/urls.ts); stored as its normalized form. */
const httpUrl = (description: string): SchemaObject => ({
  type: 'string',
  maxLength: L.string,
  format: 'http-base-url',
  description:
    `${description} An absolute http or https URL, at most ${L.string} characters, stored normalized (\`HTTPS://Example.COM:443/v1\` is stored as \`https://example.com/v1\`): ` +
    'a host, no credentials (`user:password@`) or fragment (a query is kept, after the path the server adds), no whitespace or control characters, and none of `<>"\'{}|\\^`` unencoded.',
});
const email: SchemaObject = { type: 'string', maxLength: 254, format: 'email' };
const userId: SchemaObject = { type: 'string', format: 'lowercase-uuid' };
const positive = (max: number, description?: string): SchemaObject => ({ type: 'integer', minimum: 1, maximum: max, ...(description ? { description } : {}) });
const port: SchemaObject = { type: 'integer', minimum: 1, maximum: 65535 };

const mcpServerName: SchemaObject = {
  type: 'string',
  pattern: MCP_SERVER_NAME,
  description: 'Unique among `mcpServers`: 1-64 letters, digits, `_` or `-` (the name `mcpPolicy.allowlist` and `mcpAutonomyOverrides` use).',
};
/** A secret (SECRET_KEYWORD): where these marks are must be where SECRET_POINTERS says the settings hold secrets (tested). */
const secret = (schema: SchemaObject): SchemaObject => ({ ...schema, [SECRET_KEYWORD]: true });
const mcpSecretValue: SchemaObject = secret({ type: 'string', maxLength: L.string, pattern: NO_CONTROL_CHARACTERS });
const allowedMcpTools: SchemaObject = {
  type: 'array',
  maxItems: 500,
  items: { type: 'string', minLength: 1, maxLength: 128, pattern: NO_CONTROL_CHARACTERS },
  description: "The server's tools agents may offer their model, by the server's own names. Absent: all of them. At most 500 entries.",
};

const changeUser = closed(
  ['id', 'email', 'name'],
  { id: { type: 'string' }, email: { type: 'string' }, name: { type: 'string' } },
  'The user who made the change, as they were at the time.',
);

const modelPolicyProperties: Record<string, SchemaObject> = {
  allowedModelIds: list(text(256), 'Models allowed when `allowAllServiceModels` is off, and opted-in models.'),
  blockedModelIds: list(text(256), 'Models nobody may use, custom ones included; checked first.'),
  allowCustomModels: bool("Whether sessions may use the organization's `customModels`."),
  allowedBaseUrls: list(
    httpUrl('A base URL custom models may call.'),
    "When not empty, a custom model's `baseUrl` must be under one of these: the same scheme, host and port, and a path equal to or below the base's path.",
  ),
  allowAllServiceModels: bool('Whether every model that is not custom is allowed (except blocked and opt-in ones).'),
  isFastModelsAllowed: bool(
    'Whether fast models may be used: a vendor name marked `fast`, or `extraArgs` asking for `speed: "fast"` or a `priority`/`fast` `service_tier`. Off, they are refused like blocked ones, and so is a relayed request asking for fast processing.',
  ),
  requireExplicitOptInModelIds: list(text(256), 'Models allowed only when also listed in `allowedModelIds`.'),
  allowServiceRouterByok: bool("Whether the model router may route to the organization's own (BYOK) models."),
};

/** The settings' fields; every one but `sessionRetentionDays` is required. */
const settingsProperties: Record<string, SchemaObject> = {
  sessionDefaultSettings: closed(['runInWorktree'], {
    model: text(256, 'Filled into new sessions that name no model; absent: none.'),
    specModeModel: text(256, 'Filled into new sessions that name no spec-mode model; absent: none.'),
    runInWorktree: bool('Whether each session works in a git worktree of its own.'),
  }),
  mcpAutonomyOverrides: map({ type: 'string', enum: [...MCP_AUTONOMY_LEVELS] }, 'MCP server name → the autonomy level its tools run at.'),
  mcpAutonomyUrlOverrides: list(
    closed(['urlPattern'], {
      urlPattern: text(L.string, "An HTTP MCP server's `url`, where `*` matches any run of characters (`https://mcp.example.com/*`)."),
      level: {
        type: 'string',
        enum: [...MCP_AUTONOMY_LEVELS],
        description:
          "Not in the spec. The autonomy level the matching servers' tools need; absent: `off` (they run at any level). `mcpAutonomyOverrides` by name comes first.",
      },
    }),
    'HTTP MCP servers, by URL pattern, whose tools need another autonomy level than `high`; the first entry that matches applies.',
  ),
  cloudSessionSync: bool(),
  wikiCloudSync: bool(),
  includeCoAuthoredByAgent: bool(),
  enableAgentShield: bool(),
  ideAutoConnect: bool(),
  commandAllowlist: list(text(), 'Commands the agent may run without asking.'),
  commandDenylist: list(text(), 'Commands the agent must ask before running.'),
  commandBlocklist: list(text(), 'Commands the agent may never run.'),
  customModels: list(ref('CustomModel'), "The organization's own models; ids are unique.", L.customModels),
  modelPolicy: ref('ModelPolicy'),
  mcpPolicy: closed(['enabled', 'allowlist'], {
    enabled: bool('Whether agents may use MCP servers at all.'),
    allowlist: list(text(), 'When not empty, the only MCP servers agents may use.'),
  }),
  missionPolicy: closed(['restrictedAccess', 'allowedUserIds'], {
    restrictedAccess: bool(),
    allowedUserIds: list(userId, 'Users of the organization who may run missions when access is restricted.'),
  }),
  userModelPolicies: map(
    closed([], modelPolicyProperties, "Any fields of `modelPolicy`; they replace the organization's for this user."),
    'User id (a user of the organization) → a partial model policy laid over `modelPolicy` for that user.',
    { format: 'lowercase-uuid' },
  ),
  enabledPlugins: map({ type: 'boolean' }, '`plugin@marketplace` → whether agents load it.'),
  extraKnownMarketplaces: map(
    closed(['source', 'repo'], { source: { type: 'string', enum: [...CODE_HOSTS] }, repo: text(), ref: text(255) }),
    'Marketplace name → where its plugins come from.',
  ),
  strictKnownMarketplaces: list(
    closed(['source', 'repo', 'ref', 'sha'], {
      source: { type: 'string', enum: [...CODE_HOSTS], description: 'The code host: `github`, `gitlab`, `bitbucket`, or `git` (any URL).' },
      repo: text(),
      ref: text(255),
      sha: {
        type: 'string',
        pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$',
        description: 'The full commit id (40 or 64 hexadecimal digits).',
        example: 'e83c5163316f89bfbde7d9ab23ca2e25604af290',
      },
    }),
    'When not empty, the only marketplaces agents may use, pinned to a commit.',
  ),
  networkPolicy: closed(['allowedIps'], {
    allowedIps: list(
      { type: 'string', format: 'ip-or-cidr' },
      'When not empty, the only IP addresses or CIDR blocks agents may connect to (the platform itself excepted). Agents check their model endpoint and the addresses a command names before it runs; in the sandbox, its proxies refuse every other address.',
    ),
  }),
  sandbox: ref('Sandbox'),
  restrictMemberVisibility: bool('Members see only their own sessions.'),
  restrictApiKeyCreationToManagers: bool('Only owners and managers may create API keys.'),
  managedComputersEnabled: bool(),
  managedComputersAllowedEmails: list(email, 'When not empty, only these people may create managed computers.'),
  byomComputersEnabled: bool(),
  byomComputersAllowedEmails: list(email, 'When not empty, only these people may register BYOM computers.'),
  disableAutoUpdate: bool(),
  sessionRetentionDays: {
    type: 'integer',
    minimum: L.retentionDays.min,
    maximum: L.retentionDays.max,
    description: 'Sessions with no activity for this many days are deleted with their messages. Absent (null in a change): kept forever.',
  },
  serviceRouterGuidance: prose('Guidance for the model router; may be empty.'),
  serviceRouterRules: list(
    closed(['guidance', 'when'], { guidance: prose('What the router should do.'), when: text() }),
    'Routing rules.',
    L.serviceRouterRules,
  ),
  toolApproval: closed(
    [],
    {
      tools: list(
        text(128),
        "Tools every call of which an agent must have a person approve, by name as the agent knows them (the reference agent's `Execute`, `Create`, `Edit`, `ApplyPatch`, `Task`...).",
        100,
      ),
      commandPatterns: list(
        text(),
        'Commands (the `Execute` tool) an agent must have a person approve, matched as `commandDenylist` matches (`git push*`, `rm -rf*`); a command line that cannot be checked needs approval too.',
        500,
      ),
      timeoutSeconds: {
        type: 'integer',
        minimum: 1,
        maximum: 86_400,
        description: 'How long a request waits for a user of the session before the call is denied (`expired`). Default 600.',
      },
    },
    "Not in the spec. Tool calls agents must have a person approve before running them (see `/docs` § Tool approval); a session's own `toolApproval` can only add to it. Absent: none.",
  ),
  mcpServers: list(
    ref('McpServer'),
    'Not in the spec (which has `mcpPolicy` but no place to define servers). The MCP servers agents connect to, as far as `mcpPolicy` lets them; ' +
      'names are unique. Agents offer their tools to the model as `mcp__{name}__{tool}`. Absent: none.',
    L.mcpServers,
  ),
};

const REQUIRED_SETTINGS = [
  'sessionDefaultSettings',
  'mcpAutonomyOverrides',
  'mcpAutonomyUrlOverrides',
  'cloudSessionSync',
  'wikiCloudSync',
  'includeCoAuthoredByAgent',
  'enableAgentShield',
  'ideAutoConnect',
  'commandAllowlist',
  'commandDenylist',
  'commandBlocklist',
  'customModels',
  'modelPolicy',
  'mcpPolicy',
  'missionPolicy',
  'userModelPolicies',
  'enabledPlugins',
  'extraKnownMarketplaces',
  'strictKnownMarketplaces',
  'networkPolicy',
  'sandbox',
  'restrictMemberVisibility',
  'restrictApiKeyCreationToManagers',
  'managedComputersEnabled',
  'managedComputersAllowedEmails',
  'byomComputersEnabled',
  'byomComputersAllowedEmails',
  'disableAutoUpdate',
  'serviceRouterGuidance',
  'serviceRouterRules',
];

/**
 * The enterprise settings as JSON Schemas: the spec's fields, every one typed and bounded, closed
 * at every level. Request bodies and responses share them; Ajv validates against the same
 * schemas the OpenAPI document publishes.
 */
const definitions: Record<string, SchemaObject> = {
  ControlHistoryQuery: pageQuery(),
  // Open on purpose: the model says what it accepts; the relay only needs an object to set `model` in.
  ModelRelayBody: { type: 'object', description: 'A Chat Completions request body (`messages`, `tools`, `stream`, ...); `model` is replaced.' },
  ModelRelayMessagesBody: {
    type: 'object',
    description: 'An Anthropic Messages request body (`messages`, `system`, `tools`, `max_tokens`, `thinking`, `stream`, ...); `model` is replaced.',
  },
  CustomModel: closed(
    ['id', 'model', 'baseUrl'],
    {
      id: text(256, 'What sessions name as their `model` to use this one; unique within `customModels`.'),
      model: text(256, "The model name the vendor's API expects."),
      index: { type: 'integer', minimum: 0, maximum: 10_000, description: 'Display order.' },
      baseUrl: httpUrl("The vendor API's address."),
      apiKey: secret({
        type: 'string',
        minLength: 1,
        maxLength: 4096,
        pattern: NO_CONTROL_CHARACTERS,
        description:
          'Write-only in full: encrypted at rest, and answered masked (`****` plus the last four characters of keys of 12 or more). ' +
          'Send the masked value back to keep the stored key; omit it for a model that needs none.',
      }),
      displayName: text(256),
      maxContextLimit: positive(100_000_000),
      enableThinking: bool(),
      thinkingMaxTokens: positive(100_000_000),
      maxOutputTokens: positive(100_000_000),
      extraHeaders: {
        type: 'object',
        maxProperties: 50,
        propertyNames: { maxLength: 256, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
        additionalProperties: secret({ type: 'string', maxLength: L.string, pattern: NO_CONTROL_CHARACTERS }),
        description: 'HTTP headers sent with each call: valid header names, one-line values (secrets, answered masked); at most 50.',
      },
      extraArgs: { type: 'object', maxProperties: 100, description: 'Extra request parameters, any JSON; at most 100.' },
      noImageSupport: bool(),
      cloudModelConfig: closed(
        [],
        {
          ...Object.fromEntries(CLOUD_MODEL_CONFIG_FIELDS.map((field) => [field, text()])),
          cloudProfile: text(undefined, 'The profile the commands run under (`AWS_PROFILE`, `CLOUDSDK_ACTIVE_CONFIG_NAME`).'),
          cloudRegion: text(undefined, 'The region requests are signed for, and `AWS_REGION` for the commands.'),
          // Commands that mint credentials on the computer: secrets, as a command may hold one.
          cloudAuthRefresh: secret(text(undefined, 'A sign-in command, run on the computer when the credentials fail.')),
          cloudCredentialExport: secret(
            text(undefined, 'A command run on the computer that prints the credentials: AWS credential-process JSON (signed with SigV4), or a bearer token.'),
          ),
          cloudBaseUrl: httpUrl(
            "The cloud provider's endpoint: set, agents call the model there with their computer's cloud credentials instead of through the relay.",
          ),
        },
        "A model reached with the computer's own cloud credentials (docs/agents.md).",
      ),
      baseModelId: text(256, 'The model this one derives from (the spec leaves its type open; a string here).'),
      useInRouter: bool(),
      provider: {
        type: 'string',
        enum: [...CUSTOM_MODEL_PROVIDERS],
        description:
          'Not in the spec. The API the vendor serves: `generic-chat-completion-api` (OpenAI-compatible Chat Completions; the default when absent), relayed at `/api/v0/agent/models/{customModelId}/chat/completions`, or `anthropic` (the Messages API), relayed at `/api/v0/agent/models/{customModelId}/messages`.',
      },
    },
    'A model the organization adds, served by its own vendor endpoint.',
  ),
  McpServer: {
    type: 'object',
    oneOf: [ref('StdioMcpServer'), ref('HttpMcpServer')],
    discriminator: { propertyName: 'transport' },
    description:
      'An MCP server: `{transport: "stdio", command, ...}`, started by agents on their computer, or `{transport: "http", url, ...}`, reached through the MCP relay.',
  },
  StdioMcpServer: closed(
    ['name', 'transport', 'command'],
    {
      name: mcpServerName,
      transport: { type: 'string', enum: ['stdio'] },
      command: text(L.string, 'The program agents start, in the sandbox when `sandbox.enabled`.'),
      args: list({ type: 'string', maxLength: L.string, pattern: NO_CONTROL_CHARACTERS }, 'Its arguments.', 100),
      env: {
        type: 'object',
        maxProperties: 100,
        propertyNames: { maxLength: 256, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
        additionalProperties: mcpSecretValue,
        description:
          'Environment variables the server starts with (names of letters, digits and `_`; at most 100). Values are secrets: encrypted at rest, answered masked ' +
          "(send the masked value back to keep the stored one, while `command` and `args` stay the same). They reach the agent's computer only through " +
          '`GET /api/v0/agent/mcp/{serverName}/launch`.',
      },
      allowedTools: allowedMcpTools,
    },
    'An MCP server agents start on their computer and talk to over stdio.',
  ),
  HttpMcpServer: closed(
    ['name', 'transport', 'url'],
    {
      name: mcpServerName,
      transport: { type: 'string', enum: ['http'] },
      url: httpUrl("The server's Streamable HTTP endpoint; only the MCP relay calls it."),
      headers: {
        type: 'object',
        maxProperties: 50,
        propertyNames: { maxLength: 256, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
        additionalProperties: mcpSecretValue,
        description:
          'HTTP headers the relay adds to each request (valid header names; at most 50), `Authorization` included. Values are secrets: encrypted at rest, ' +
          'answered masked everywhere and never sent to agents (send the masked value back to keep the stored one, while the origin of `url` stays the same).',
      },
      allowedTools: allowedMcpTools,
    },
    'An MCP server agents reach through `/api/v0/agent/mcp/{serverName}` (the MCP relay), which adds its headers.',
  ),
  // An object (a message) or an array (a batch): a missing body is refused, naming `body`, rather than relayed as nothing.
  McpRelayBody: { type: ['object', 'array'], description: 'A JSON-RPC message or batch of the Streamable HTTP transport, passed on as it is.' },
  CloudModelAccess: closed(
    [],
    Object.fromEntries(CLOUD_MODEL_CONFIG_FIELDS.map((field) => [field, { type: 'string' }])),
    "A custom model's cloudModelConfig, its commands revealed.",
  ),
  McpLaunch: closed(
    ['command', 'args', 'env'],
    {
      command: { type: 'string' },
      args: { type: 'array', items: { type: 'string' } },
      env: { type: 'object', additionalProperties: { type: 'string' }, description: 'In plain text.' },
    },
    'How to start a stdio MCP server, its secrets revealed.',
  ),
  ModelPolicy: closed(
    Object.keys(modelPolicyProperties),
    modelPolicyProperties,
    'Which models sessions may use; see the rules in `/docs` § Enterprise controls.',
  ),
  Sandbox: closed(['enabled', 'filesystem', 'network'], {
    enabled: bool(
      'Agents run every command inside the OS sandbox (@anthropic-ai/sandbox-runtime) configured by these settings, and refuse commands where it cannot run. The workspace and a private $TMPDIR are always writable.',
    ),
    filesystem: closed(['allowWrite', 'allowRead', 'denyWrite', 'denyRead'], {
      allowWrite: list(text(), 'Paths the agent may write.'),
      allowRead: list(text(), 'Paths the agent may read.'),
      denyWrite: list(text(), 'Paths the agent may not write.'),
      denyRead: list(text(), 'Paths the agent may not read.'),
    }),
    network: closed(['allowedDomains', 'allowUnixSockets', 'allowAllUnixSockets', 'allowLocalBinding'], {
      // The sandbox runtime's own rule: a name with a dot (or localhost), a wildcard over at least two labels, an optional port.
      allowedDomains: list(
        { type: 'string', minLength: 1, maxLength: 253, pattern: `^(localhost|(\\*\\.)?[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)+)(:${PORT_NUMBER})?$` },
        'Domains the agent may reach; `*.example.com` covers subdomains (not `*.com`), `example.com:443` only that port.',
      ),
      allowUnixSockets: list(text(), 'Unix socket paths the agent may use.'),
      allowAllUnixSockets: bool(),
      allowLocalBinding: bool(),
      httpProxyPort: {
        ...port,
        description:
          "An HTTP proxy already listening on the computer that sandboxed commands use instead of the sandbox's own. Absent: the sandbox runs its own filtering proxy.",
      },
      socksProxyPort: {
        ...port,
        description:
          "A SOCKS proxy already listening on the computer that sandboxed commands use instead of the sandbox's own. Absent: the sandbox runs its own.",
      },
    }),
  }),
  EnterpriseSettings: {
    ...closed(
      REQUIRED_SETTINGS,
      settingsProperties,
      "A snapshot of the organization's settings: every field is present except `sessionRetentionDays`, `toolApproval`, `mcpServers`, `sessionDefaultSettings.model`/`specModeModel` and the sandbox proxy ports. " +
        "`default`: a new organization's settings (revision 0), which revision 1's `diff` starts from.",
    ),
    // Published so that clients (the console's history) can show what revision 1 changed from; Ajv ignores it (useDefaults: false).
    default: defaultSettings(),
  },
  ChangeEnterpriseControlsBody: closed(['settings'], {
    settings: {
      type: 'object',
      description:
        'A JSON Merge Patch (RFC 7396) over the current settings: fields given replace theirs, objects merge member by member, ' +
        '`null` removes a field (an optional one; a required one answers 400), arrays replace the whole array.',
    },
  }),
  EnterpriseControlUser: changeUser,
  EnterpriseControlChangeList: pageOf('changes', 'EnterpriseControlChange'),
  EnterpriseControlChange: closed(['revision', 'settings', 'user', 'updatedAt'], {
    revision: { type: 'integer', minimum: 1 },
    settings: ref('EnterpriseSettings'),
    user: ref('EnterpriseControlUser'),
    updatedAt: { type: 'string', format: 'date-time' },
  }),
  JsonPatchOperation: closed(['op', 'path'], {
    op: { type: 'string', enum: ['add', 'remove', 'replace'] },
    path: { type: 'string', description: 'A JSON Pointer into the settings (RFC 6901).' },
    value: { description: 'The new value (add, replace); secrets masked.' },
  }),
  EnterpriseControlRevision: closed(['revision', 'settings', 'user', 'updatedAt', 'diff'], {
    revision: { type: 'integer', minimum: 1 },
    settings: ref('EnterpriseSettings'),
    user: ref('EnterpriseControlUser'),
    updatedAt: { type: 'string', format: 'date-time' },
    diff: {
      type: 'array',
      items: ref('JsonPatchOperation'),
      description: "What this revision changed: RFC 6902 operations that turn the previous revision's settings (the defaults, for revision 1) into these.",
    },
  }),
  EnterpriseControls: closed(['revision', 'settings', 'user', 'updatedAt'], {
    revision: { type: 'integer', minimum: 0, description: 'The latest revision; 0 while the organization has the defaults.' },
    settings: ref('EnterpriseSettings'),
    user: { ...changeUser, nullable: true, description: 'Who made the latest revision; null at revision 0.' },
    updatedAt: { type: 'string', format: 'date-time', nullable: true, description: 'When; null at revision 0.' },
    warnings: SETTING_WARNINGS_SCHEMA,
  }),
  AgentPolicy: closed(
    ['revision', 'modelPolicy', ...AGENT_POLICY_FIELDS],
    {
      revision: { type: 'integer', minimum: 0, description: 'The revision of the controls this policy comes from.' },
      modelPolicy: {
        ...ref('ModelPolicy'),
        description: "The caller's effective model policy: the organization's, with the caller's `userModelPolicies` entry laid over it.",
      },
      ...Object.fromEntries(AGENT_POLICY_FIELDS.map((field) => [field, settingsProperties[field]])),
      toolApproval: settingsProperties.toolApproval,
      warnings: {
        ...SETTING_WARNINGS_SCHEMA,
        description: 'Not in the spec. The settings of this policy that ask for something this server does not do (docs/controls.md); absent when none.',
      },
    },
    "The controls an agent obeys, as one document (custom models' keys and MCP servers' header and env values masked).",
  ),
};
markNoEffect(definitions, 'EnterpriseSettings', NO_EFFECT_SETTINGS);

export const enterpriseControlsSchemas = new SchemaRegistry('enterprise-controls').add(definitions);
