"""Dataclass methods compiled at build time (app/web/generated_code.py, issue 14): a class made
with the build's table is the class made without it, and a source not in the table is compiled
as before. Here on CPython, recording its own table; the Node boot test checks the built one."""

import builtins
import dataclasses
import marshal

import pytest

from support import ROOT  # noqa: F401  (puts app/ on sys.path)
from web.generated_code import precompiled, read_table, recording

CLASS = '''
@dataclasses.dataclass(frozen=True)
class Layer:
    kv_heads: int
    head_dim: int
    window: int | None = None
    tags: tuple = dataclasses.field(default_factory=tuple)
'''


def make(exec_table=None):
    namespace = {"dataclasses": dataclasses}
    if exec_table is None:
        exec(CLASS, namespace)
    else:
        with precompiled(exec_table) as generated:
            exec(CLASS, namespace)
        namespace["generated"] = generated
    return namespace


def recorded() -> dict:
    with recording() as r:
        make()
    return r.table


def test_a_class_from_the_table_is_the_class_without_it():
    table = recorded()
    # The class statement above and the methods' sources: one on Python 3.13+, one a method before.
    assert len(table) >= 2
    plain, fast = make(), make(table)
    assert fast["generated"].used == len(table) and fast["generated"].missed == 0
    a, b = plain["Layer"](8, 128, 4096), fast["Layer"](8, 128, 4096)
    assert repr(a) == repr(b) == "Layer(kv_heads=8, head_dim=128, window=4096, tags=())"
    assert fast["Layer"](8, 128) == fast["Layer"](8, 128, None, ())
    assert hash(b) == hash(fast["Layer"](8, 128, 4096))
    assert fast["Layer"](8, 128) != fast["Layer"](8, 64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.head_dim = 64
    assert dataclasses.replace(b, window=None) == fast["Layer"](8, 128)
    assert [f.name for f in dataclasses.fields(b)] == ["kv_heads", "head_dim", "window", "tags"]


def test_a_source_not_in_the_table_is_compiled_as_before():
    table = {"def __create_fn__():\n return ()": compile("x = 1", "<string>", "exec")}
    fast = make(table)
    assert fast["generated"].used == 0 and fast["generated"].missed == len(recorded())
    assert fast["Layer"](1, 2).head_dim == 2


def test_exec_is_given_back_even_when_the_import_fails():
    real = builtins.exec
    with pytest.raises(ZeroDivisionError):
        with precompiled({}):
            assert builtins.exec is not real
            1 / 0
    assert builtins.exec is real


def test_a_missing_or_damaged_table_means_compiling_as_before(tmp_path):
    assert read_table(str(tmp_path / "absent.marshal")) == {}
    (tmp_path / "bad.marshal").write_bytes(b"\x00not marshal")
    assert read_table(str(tmp_path / "bad.marshal")) == {}
    (tmp_path / "list.marshal").write_bytes(marshal.dumps([1, 2]))
    assert read_table(str(tmp_path / "list.marshal")) == {}
