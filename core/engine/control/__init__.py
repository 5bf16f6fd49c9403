"""Conversation control in the engine (docs/protocol.md#conversation-control): what a message
asks for (`requested`), steering a running turn (`steering`) and forking a context
(`forking`). The queue is the context's lane (core/engine/lanes.py)."""
