// Connects the official TypeScript MCP client to promptd's MCP server:
// the endpoint is per env (/v1/mcp/{env}), behind promptd's bearer token.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

/** Where to reach promptd's MCP server. */
export interface PromptdMcpOptions {
  /** promptd's base URL (http://127.0.0.1:8080). */
  url: string;
  /** A promptd token (runtime or admin); its scopes decide what is listed. */
  token: string;
  /** The env whose agents are the prompts. */
  env: string;
  /** Called on notifications/prompts/list_changed. */
  onPromptsChanged?: () => void;
  /** The client's name in initialize (default "promptd-mcp-client"). */
  name?: string;
}

/** The MCP endpoint of env on promptd at url. */
export function mcpEndpoint(url: string, env: string): URL {
  return new URL(`/v1/mcp/${encodeURIComponent(env)}`, url);
}

/** A connected MCP client of promptd's server for one env. */
export async function connectPromptd(o: PromptdMcpOptions): Promise<Client> {
  const client = new Client({ name: o.name ?? "promptd-mcp-client", version: "0.1.0" });
  const onChanged = o.onPromptsChanged;
  if (onChanged) {
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => { onChanged(); });
  }
  const transport = new StreamableHTTPClientTransport(mcpEndpoint(o.url, o.env), {
    requestInit: { headers: { Authorization: `Bearer ${o.token}` } },
  });
  await client.connect(transport);
  return client;
}
