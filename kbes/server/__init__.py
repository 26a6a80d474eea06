"""The MCP server: transports (stdio, streamable HTTP), bearer tokens, the approval of edits,
articles as resources and push on change. Thin: it turns MCP calls into contract calls
(`kbes.tools`). This package's own import loads nothing, so `kbes serve` can read its options
(kbes.server.edit_policy, kbes.server.identity) without importing the MCP SDK."""
