// An MCP server of the official TypeScript SDK (Streamable HTTP, stateless,
// JSON responses) with the decision verifier, for the Go tests: it listens
// on 127.0.0.1:0 and prints "listening PORT"; GET /runs answers how often
// each tool ran. Environment: AUDIENCE (this server's resource URI) and
// DECISION_JWKS_FILE or DECISION_JWKS_URL (the service's key set).
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { createVerifier, fileKeys, remoteKeys, verifyDecisions, decisionOf } from '../index.js';

const keys = process.env.DECISION_JWKS_FILE ? fileKeys(process.env.DECISION_JWKS_FILE) : remoteKeys(process.env.DECISION_JWKS_URL, 0);
const verifier = createVerifier({ audience: process.env.AUDIENCE, keys });
const runs = {};
const seen = [];

function mcpServer() {
  const server = new McpServer({ name: 'payments-ts', version: '1.0.0' });
  const ran = (name, extra, text) => {
    runs[name] = (runs[name] ?? 0) + 1;
    const d = decisionOf(extra);
    seen.push({ tool: name, sub: d && d.sub, jti: d && d.jti, policyversion: d && d.policy_version });
    return { content: [{ type: 'text', text }] };
  };
  server.registerTool('search', { inputSchema: { query: z.string() } }, async ({ query }, extra) => ran('search', extra, `searched ${query}`));
  server.registerTool('issue_refund', { inputSchema: { orderId: z.string(), amountMinor: z.number(), currency: z.string() } },
    async ({ amountMinor }, extra) => ran('issue_refund', extra, `refunded ${amountMinor}`));
  return server;
}

const http = createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/runs') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ runs, seen }));
    return;
  }
  const server = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => { transport.close(); server.close(); });
  await server.connect(transport);
  verifyDecisions(transport, verifier, { onRefused: (e) => console.error(`refused: ${e.message}`) });
  await transport.handleRequest(req, res);
});
http.listen(0, '127.0.0.1', () => console.log(`listening ${http.address().port}`));
