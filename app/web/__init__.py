"""The browser layer: the only code that touches the page, one module per concern.

Each module reads inputs or writes text into its own part of the page and asks the engine
(`kvcalc`, the same package the CLI runs) for every figure; none computes a figure itself.
`app/main.py` wires the modules to the page's events.
"""
