"""SGLang's home: engine (its token pool, usable memory, releases, what it prints) and log (its
start-up log's reader)."""
