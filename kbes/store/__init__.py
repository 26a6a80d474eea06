"""The store: `KnowledgeBaseStore`, the parts it holds (its eventsourcing application for the
log, its views, its commands, queries and searches) and their persistence wiring, SQLite and
PostgreSQL. Callers outside this room use the store's methods only, never its parts."""
