/**
 * The organization's sandbox settings, as enterprise controls store them and as the agent channel hands them to the
 * agent. The agent (src/agent) imports only from src/contract: it is a separate program that users run on their own
 * machines, and must build without the server.
 */
export interface Sandbox {
  enabled: boolean;
  filesystem: { allowWrite: string[]; allowRead: string[]; denyWrite: string[]; denyRead: string[] };
  network: {
    allowedDomains: string[];
    allowUnixSockets: string[];
    allowAllUnixSockets: boolean;
    allowLocalBinding: boolean;
    httpProxyPort?: number;
    socksProxyPort?: number;
  };
}
