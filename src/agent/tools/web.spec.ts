import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { SandboxSettings } from '../sandbox/sandbox';
import { ToolPolicy } from './tool';
import { webFetchTool, webSearchTool } from './web';

/** A local stand-in for the web: each test says how it answers; every request it gets is counted. */
class StandIn {
  requests: string[] = [];
  private server!: Server;
  answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('hello');
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.requests.push(req.url ?? '');
      this.answer(req, res);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const sandbox = (enabled: boolean, allowedDomains: string[] = []): SandboxSettings => ({
  enabled,
  filesystem: { allowWrite: [], denyWrite: [], denyRead: [], allowRead: [] },
  network: { allowedDomains, allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false },
});

describe('WebFetch and WebSearch, against local stand-ins', () => {
  const web = new StandIn();
  let base: string;
  const env = { ...process.env };
  const run = (input: Record<string, unknown>, policy: Partial<ToolPolicy> = {}) =>
    webFetchTool.run(input, {
      workspace: '/nonexistent',
      policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [], ...policy },
      signal: new AbortController().signal,
    });

  beforeAll(async () => {
    await web.start();
    base = `http://127.0.0.1:${web.port}`;
  });
  afterAll(() => web.stop());
  beforeEach(() => {
    web.requests = [];
    process.env.AGENT_WEB_ALLOWED_HOSTS = `127.0.0.1:${web.port}`;
  });
  afterEach(() => {
    process.env = { ...env };
  });

  it('returns an HTML page as Markdown, without its scripts, and says its status and type', async () => {
    web.answer = (_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end('<html><head><script>steal()</script></head><body><h1>Release notes</h1><p>See <a href="/v2">v2</a>.</p></body></html>');
    };
    expect(await run({ url: `${base}/notes` })).toEqual({
      isError: false,
      content: `${base}/notes (200, text/html)\n\n# Release notes\n\nSee [v2](/v2).`,
    });
    expect((await run({ url: `${base}/notes`, format: 'html' })).content).toContain('<script>steal()</script>');
  });

  it('cuts a long page at max_length, and refuses what is not text', async () => {
    web.answer = (_req, res) => res.end('x'.repeat(500));
    expect((await run({ url: base, max_length: 100 })).content).toMatch(/\n\nx{100}\n\[cut: the page has 500 characters, only the first 100 are shown\]$/);
    web.answer = (_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    };
    expect(await run({ url: `${base}/logo.png` })).toEqual({
      isError: true,
      content: `${base}/logo.png answered 200 with image/png, which is not text; it was not read.`,
    });
  });

  it('refuses loopback, private and metadata addresses unless the operator names the host, fetching nothing', async () => {
    delete process.env.AGENT_WEB_ALLOWED_HOSTS;
    for (const url of [
      base,
      `http://localhost:${web.port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.8/',
      'http://[::1]:80/',
      'http://metadata.google.internal/',
    ]) {
      const result = await run({ url });
      expect(result.isError).toBe(true);
      expect(result.content).toMatch(/^Refused: .*; nothing was fetched\.$/);
    }
    expect((await run({ url: 'file:///etc/passwd' })).content).toBe('Refused: only http and https addresses are fetched, not file:');
    expect(web.requests).toEqual([]);
  });

  it('does not follow a redirect, to a forbidden address or any other: it says where it leads', async () => {
    web.answer = (_req, res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam/' });
      res.end();
    };
    expect(await run({ url: `${base}/go` })).toEqual({
      isError: false,
      content: `${base}/go answered 302: it redirects to http://169.254.169.254/latest/meta-data/iam/. Redirects are not followed: fetch that address if it is the page you want.`,
    });
    expect(web.requests).toEqual(['/go']);
  });

  it("keeps to the organization's networkPolicy.allowedIps, and to allowedDomains under the sandbox", async () => {
    expect((await run({ url: base }, { networkPolicy: { allowedIps: ['10.0.0.0/8'] } })).content).toMatch(/^Refused: .*outside the organization's allowed IPs/);
    expect((await run({ url: base }, { sandbox: sandbox(true, ['example.com']) })).content).toBe(
      "Refused by the organization's sandbox.network.allowedDomains: 127.0.0.1 is not among them; nothing was fetched.",
    );
    expect(web.requests).toEqual([]);
    expect((await run({ url: base }, { sandbox: sandbox(true, [`127.0.0.1:${web.port}`]), networkPolicy: { allowedIps: ['127.0.0.1'] } })).isError).toBe(false);
    expect(web.requests).toHaveLength(1);
  });

  it('searches through the operator’s search service (SearXNG JSON), its results listed', async () => {
    web.answer = (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ results: [{ title: 'Node.js 20', url: 'https://nodejs.org/en/blog/release/v20.0.0', content: 'Node.js 20 is out.' }] }));
    };
    delete process.env.AGENT_WEB_ALLOWED_HOSTS;
    const search = webSearchTool(base);
    const result = await search.run(
      { query: 'node 20 release' },
      { workspace: '/nonexistent', policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [] }, signal: new AbortController().signal },
    );
    expect(result).toEqual({ isError: false, content: '1. Node.js 20\n   https://nodejs.org/en/blog/release/v20.0.0\n   Node.js 20 is out.' });
    expect(web.requests).toEqual(['/search?q=node+20+release&format=json']);
  });
});
