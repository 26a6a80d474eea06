"""The store: the application (`KnowledgeBaseStore`) and its persistence wiring, SQLite and
PostgreSQL. Callers outside this room use the application's methods only, never its views,
recorder or repository."""
