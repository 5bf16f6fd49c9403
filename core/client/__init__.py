"""A client of any A2A agent: the `a2a-wrapper send/tasks/watch/pending/answer/cancel/changes`
commands and the stdio MCP server (`a2a-wrapper mcp`).

Built on the official `a2a-sdk` client only: nothing here imports the daemon's engine or
bindings, so it works the same against our daemon and anyone else's agent. The MCP tools are
written against `access.AgentAccess`; `remote.RemoteAgents` implements it over A2A.
"""
