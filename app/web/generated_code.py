"""Dataclass methods without compiling them at start-up.

A dataclass makes its methods by exec'ing source it generates (the standard library's
dataclasses.py), so every start of the page compiled that source again: the engine's classes
took 75-125 ms of Chromium's start-up in Pyodide, more than the engine's own bytecode. The
build runs the same Pyodide over the same engine and keeps each generated source with its
compiled code (tools/precompile.mjs --record-exec, into the app's zip). While the engine is
imported, an exec of a source found there runs the code compiled from exactly that text; any
other exec compiles as before. The same text compiled the same way is the same function.

No page access here: the build's Node check imports it too.
"""

import builtins
import marshal
import os

TABLE = os.path.join(os.path.dirname(__file__), "generated_code.marshal")


def read_table(path: str = TABLE) -> dict:
    """{generated source: code}; empty if the build left none or it cannot be read."""
    try:
        # Through the loader: inside the app's zip in the page, on disk in the build's check.
        table = marshal.loads(__loader__.get_data(path))
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return table if isinstance(table, dict) else {}


class _ExecReplaced:
    """While in the with block, builtins.exec is self._run (which calls the real one, self._exec)."""

    def __enter__(self):
        self._exec = builtins.exec
        builtins.exec = self._run
        return self

    def __exit__(self, *exc):
        builtins.exec = self._exec
        return False


class precompiled(_ExecReplaced):
    """with precompiled(): import ... -- an exec of a source in the table runs the table's code."""

    def __init__(self, table: dict | None = None):
        self.table = read_table() if table is None else table
        self.used = self.missed = 0

    def _run(self, source, *args, **kwargs):
        code = self.table.get(source) if isinstance(source, str) else None
        if code is None:
            self.missed += isinstance(source, str)
            return self._exec(source, *args, **kwargs)
        self.used += 1
        return self._exec(code, *args, **kwargs)


class recording(_ExecReplaced):
    """with recording() as r: import ... -- each source string exec'd is compiled as exec would
    compile it (filename "<string>", no inherited __future__ flags, as dataclasses.py has none),
    kept in r.table and run."""

    def __init__(self):
        self.table = {}

    def _run(self, source, *args, **kwargs):
        if isinstance(source, str):
            source = self.table.setdefault(source, compile(source, "<string>", "exec", dont_inherit=True))
        return self._exec(source, *args, **kwargs)
