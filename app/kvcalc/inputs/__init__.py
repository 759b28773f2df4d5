"""The question as the calculator takes it: the options (one schema for the CLI, the page and the
link), the form's values, a pasted start-up log dispatched to its engine's reader, what a log's
figures replace (log_flow), and the Scenario built from them all."""
