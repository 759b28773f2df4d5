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
        with open(path, "rb") as file:
            table = marshal.load(file)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return table if isinstance(table, dict) else {}


class precompiled:
    """with precompiled(): import ... -- builtins.exec takes the table's code for its sources."""

    def __init__(self, table: dict | None = None):
        self.table = read_table() if table is None else table
        self.used = self.missed = 0

    def __enter__(self):
        self._exec = real_exec = builtins.exec
        table = self.table

        def exec_(source, *args, **kwargs):
            code = table.get(source) if isinstance(source, str) else None
            if code is None:
                self.missed += isinstance(source, str)
                return real_exec(source, *args, **kwargs)
            self.used += 1
            return real_exec(code, *args, **kwargs)

        builtins.exec = exec_
        return self

    def __exit__(self, *exc):
        builtins.exec = self._exec
        return False


def record(table: dict):
    """An exec that compiles each source string as exec would (filename "<string>", no
    inherited __future__ flags, as dataclasses.py has none) and keeps it in `table`."""
    real_exec = builtins.exec

    def exec_(source, *args, **kwargs):
        if isinstance(source, str):
            source = table.setdefault(source, compile(source, "<string>", "exec", dont_inherit=True))
        return real_exec(source, *args, **kwargs)

    return exec_
