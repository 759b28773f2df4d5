"""Files the user opens or drops: config.json, GGUF, .safetensors shards and their
model.safetensors.index.json. Only the headers are read, through File.slice, here in the tab;
nothing is uploaded. What they say goes into the form as a pasted config and exact weight
bytes, so the share link carries what was derived, never the files."""

from kvcalc import gguf, safetensors
from kvcalc.errors import FIRST_READ, InputError, NeedMore
from kvcalc.hfconfig import MAX_CONFIG_BYTES, parse_config_text

from web import model_picker, state
from web.dom import el, put

MAX_INDEX_BYTES = 64 << 20


async def _bytes(file, start: int, end: int) -> bytes:
    buffer = await file.slice(start, end).arrayBuffer()
    return bytes(buffer.to_py())


async def _header(file, read_header):
    """read_header(data, size) on the file's start, read longer while it raises NeedMore (the
    engine's read_header_from, through File.slice)."""
    want = min(FIRST_READ, file.size)
    while True:
        data = await _bytes(file, 0, want)
        try:
            return read_header(data, file.size)
        except NeedMore as more:
            want = more.next_read(want, file.size)


_set_by_files = {}       # field -> the value these files put there, cleared with another model


def forget() -> None:
    """Another model was chosen: the weights read from files belong to the old one."""
    for name, value in _set_by_files.items():
        if el(f"#{name}").value == value:
            el(f"#{name}").value = ""
    _set_by_files.clear()
    put("#files-status", "")


async def read_files(files: list) -> tuple[dict, list[str]]:
    """(the form values the files give, what was read), or an InputError naming the file."""
    values, read, weights, config, shards, layers = {}, [], 0, None, [], None
    for file in files:
        name = str(file.name)
        lower = name.lower()
        try:
            if lower.endswith(".gguf"):
                header = await _header(file, gguf.read_header)
                given = gguf.inputs(header)
                config, layers = given["hf-config"], given["layer-weights-bytes"]
                weights += header.weights_bytes
                values["params"] = given["params"]
                read.append(f"{name}: GGUF v{header.version}, {len(header.tensors):,} tensors, "
                            f"header {header.header_bytes:,} of {file.size:,} bytes")
            elif lower.endswith(".safetensors"):
                shard = await _header(file, safetensors.read_header)
                weights += shard.tensor_bytes
                shards.append(shard)
                read.append(f"{name}: safetensors header")
            elif lower.endswith(".json"):
                if file.size > MAX_INDEX_BYTES:
                    raise InputError("hf-config", f"{file.size:,} bytes is past any config or index file")
                text = await _bytes(file, 0, file.size)
                if file.size > MAX_CONFIG_BYTES and b'"weight_map"' not in text:
                    raise InputError("hf-config", f"the file is {file.size:,} bytes; the limit is "
                                                  f"{MAX_CONFIG_BYTES:,} (real configs are a few KB)")
                parsed = parse_config_text(text) if file.size <= MAX_CONFIG_BYTES else None
                if parsed is not None and not safetensors.is_index(parsed):
                    config = parsed
                    read.append(f"{name}: config.json")
                else:
                    weights += safetensors.read_index(parsed if parsed is not None else text.decode("utf-8", "replace"))
                    read.append(f"{name}: index, metadata.total_size")
            else:
                raise InputError("hf-config", "takes config.json, model.safetensors.index.json, .safetensors "
                                              "and .gguf files")
        except InputError as e:
            raise InputError(e.field, f"{name[:80]}: {e.message}") from None
    if config is not None:
        values["hf-config"] = config
    if weights:
        values["weights-bytes"] = str(weights)
    if shards and config is not None and len(shards) == len(files):
        from kvcalc.hfconfig import model_from_config
        layers = safetensors.layer_list(shards, len(model_from_config(config).layers))
    if layers:
        values["layer-weights-bytes"] = layers
    return values, read


async def open_files(files, then) -> None:
    """Read the files, write what they give into the form, then `then()`."""
    import json
    put("#files-status", "Reading the headers here in this tab…")
    try:
        values, read = await read_files(files)
    except InputError as e:
        state.config, state.config_error = None, e
        model_picker.choose("config")
        put("#files-status", f"Not read: {e.message}")
        then()
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
    put("#files-status", "Read here, nothing uploaded: " + "; ".join(read) + ".")
    then()
