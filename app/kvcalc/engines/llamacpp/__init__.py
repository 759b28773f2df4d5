"""llama.cpp's home: engine (its KV cells, compute buffers, releases, what it prints) and log (its
start-up log's reader)."""
