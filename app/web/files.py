"""Files the user opens or drops: config.json, GGUF, .safetensors shards and their
model.safetensors.index.json. Only the headers are read, through File.slice, here in the tab;
nothing is uploaded. What they say goes into the form as a pasted config and exact weight
bytes, so the share link carries what was derived, never the files.

The engine's header parsers are incremental (kvcalc/errors.py): this module feeds them
File.slice chunks and, between slices of their work, gives the page its thread back
(asyncio.sleep(0) is a browser task in Pyodide's event loop), so a large or hostile header
never freezes the page; #files-status counts the bytes read. A file that is refused leaves the
model and the figures as they were."""

import json

from kvcalc.readers import gguf, safetensors
from kvcalc.engines import ENGINES, native_engine, title
from kvcalc.errors import InputError
from kvcalc.readers.hfconfig import MAX_CONFIG_BYTES, model_from_config, parse_config_text

from web import model_picker, state
from web.dom import el, on, put
from web.file_slices import Cancelled, Progress, drive, run_parser, whole

MAX_INDEX_BYTES = safetensors.MAX_INDEX_BYTES

_generation = [0]                # the latest open_files: an older one still reading stops writing
_engine_chosen = [False]         # the user chose "Size as" (a change event: a program's writes fire none)


_set_by_files = {}       # field -> the value these files put there, cleared with another model


def forget() -> None:
    """Another model was chosen: the weights read from files belong to the old one."""
    for name, value in _set_by_files.items():
        if el(f"#{name}").value == value:
            el(f"#{name}").value = ""
    _set_by_files.clear()
    put("#files-status", "")


class _ConfigError(InputError):
    """A config.json that is not a config: shown in the config box, as when it is pasted."""


async def _read_json(file, name: str, progress: Progress, found: dict) -> None:
    size = int(file.size)
    if size > MAX_INDEX_BYTES:
        raise InputError("hf-config", f"{size:,} bytes is past any config or index file")
    text = await whole(file, progress)
    if size > MAX_CONFIG_BYTES and b'"weight_map"' not in text:
        raise _ConfigError("hf-config", f"the file is {size:,} bytes; the limit is "
                                        f"{MAX_CONFIG_BYTES:,} (real configs are a few KB)")
    if size <= MAX_CONFIG_BYTES:
        try:
            parsed = parse_config_text(text)              # checks the nesting before json.loads
        except InputError as e:
            raise _ConfigError(e.field, e.message) from None
        if not safetensors.is_index(parsed):
            found["config"] = parsed
            found["read"].append(f"{name}: config.json")
            return
        index = safetensors.read_index_full(parsed)
    else:
        index = await run_parser(safetensors.parse_index(safetensors.index_text(text)), progress)
    found["indexes"].append((name, index))
    found["read"].append(f"{name}: index, metadata.total_size")


async def _read_one(file, progress: Progress, found: dict) -> None:
    name = str(file.name)
    lower = name.lower()
    progress.file(file)
    if lower.endswith(".gguf"):
        header = await drive(gguf.parse(int(file.size)), file, progress)
        await progress.breathe(force=True)
        given = gguf.inputs(header)
        found["config"], found["layers"] = given["hf-config"], given["layer-weights-bytes"]
        found["gguf_bytes"] += header.weights_bytes
        found["params"] = given["params"]
        found["gguf"] = True
        found["read"].append(f"{name}: GGUF v{header.version}, {len(header.tensors):,} tensors, "
                             f"header {header.header_bytes:,} of {int(file.size):,} bytes")
    elif lower.endswith(".safetensors"):
        shard = await drive(safetensors.parse(int(file.size)), file, progress)
        found["shards"].append((name, shard))
        found["read"].append(f"{name}: safetensors header")
    elif lower.endswith(".json"):
        await _read_json(file, name, progress, found)
    else:
        raise InputError("hf-config", "takes config.json, model.safetensors.index.json, .safetensors "
                                      "and .gguf files")


async def read_files(files: list, generation: int | None = None) -> tuple[dict, list[str]]:
    """(the form values the files give, what was read), or an InputError naming the file."""
    progress = Progress(_generation[0] if generation is None else generation, _generation)
    found = {"config": None, "layers": None, "params": None, "gguf_bytes": 0, "gguf": False, "shards": [],
             "indexes": [], "read": []}
    for file in files:
        name = str(file.name)
        try:
            await _read_one(file, progress, found)
        except _ConfigError as e:
            raise _ConfigError(e.field, f"{name[:80]}: {e.message}") from None
        except InputError as e:
            raise InputError(e.field, f"{name[:80]}: {e.message}") from None
    try:
        st_bytes, complete, note = safetensors.checkpoint_bytes(found["shards"], found["indexes"])
    except InputError as e:
        raise InputError(e.field, e.message) from None
    if note:
        found["read"][-1] += note
    values, config = {}, found["config"]
    if config is not None:
        values["hf-config"] = config
    if found["params"]:
        values["params"] = found["params"]
    weights = found["gguf_bytes"] + st_bytes
    if weights:
        values["weights-bytes"] = str(weights)
    layers = found["layers"]
    if complete and config is not None and not found["gguf_bytes"]:
        layers = safetensors.layer_list([w for _, w in found["shards"]], len(model_from_config(config).layers))
    if layers:
        values["layer-weights-bytes"] = layers
    if found["gguf"]:
        values["format"] = "gguf"
    return values, found["read"]


def wire() -> None:
    """Note when the user chooses "Size as": a GGUF then sizes as they chose."""
    on(el("#engine"), "change", lambda *_: _engine_chosen.__setitem__(0, True))


def _page_default_engine() -> str:
    """The engine the page sizes with until one is chosen: its selected-by-default option."""
    return next((str(o.value) for o in el("#engine").options if o.defaultSelected), "")


def _switch_to_native(file_format: str) -> str:
    """A file opened while the page still sizes with its own default engine (the user chose none,
    and no pasted log named one): the rules of the engine whose own format it is (a GGUF:
    llama.cpp's), the release typed for the other engine cleared. The words that say so."""
    select, native = el("#engine"), native_engine(file_format)
    if native is None or _engine_chosen[0] or select.value == native or select.value != _page_default_engine():
        return ""
    if state.reading is not None:        # the engine is the log's: its server ran it
        return ""
    before = select.value
    select.value = native
    el("#engine-version").value = ""     # a release of the engine before, not of this one
    return (f" Sized as {title(native)} allocates, since a {file_format.upper()} is {title(native)}'s format and no "
            f"engine was chosen (the page's default is {title(before) if before in ENGINES else before}): choose "
            "another under Size as to size it there.")


async def open_files(files, then) -> None:
    """Read the files, write what they give into the form, then `then()`. A file refused
    leaves the model and the figures as they were, with "Not read: why" in #files-status."""
    _generation[0] += 1
    generation = _generation[0]
    put("#files-status", "Reading the headers here in this tab…")
    try:
        values, read = await read_files(files, generation)
    except Cancelled:
        return
    except _ConfigError as e:
        # A config.json that is not a config: said where a pasted one would be.
        state.config, state.config_error = None, e
        model_picker.choose("config")
        put("#files-status", f"Not read: {e.message}")
        then()
        return
    except InputError as e:
        put("#files-status", f"Not read: {e.message}")
        return
    except Exception as e:          # a fault in a reader: said, never left "Reading…" forever
        put("#files-status", f"Not read: the files could not be read ({type(e).__name__})")
        return
    if _generation[0] != generation:
        return
    if "hf-config" in values:
        model_picker.choose("config")
        el("#hf-config").value = json.dumps(values["hf-config"], indent=2)
        model_picker.parse_config()
    forget()
    for name in ("weights-bytes", "params", "layer-weights-bytes"):
        if name in values:
            el(f"#{name}").value = _set_by_files[name] = values[name]
    if "weights-bytes" in values:
        el("#advanced").open = True
    switched = _switch_to_native(values["format"]) if "format" in values else ""
    put("#files-status", "Read here, nothing uploaded: " + "; ".join(read) + "." + switched)
    then()
