"""vLLM's home: engine (its block allocator, usable memory, what it prints), release (the rules
each release changed), profile (the memory profiling run's overhead) and log (its start-up log's
reader)."""
