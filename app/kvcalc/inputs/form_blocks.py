"""The page's field blocks as data, and their HTML rendered from it: pure text, no DOM.

Each field of the page is an option of the schema (inputs.options.OPTIONS): the option's name is the
control's id, name and data-option; its help is the block's help text; its kind sets the keyboard
the control asks for (int: numeric, decimal: decimal; count, text and list are typed words, so
neither autocomplete nor spellcheck); its default is the value the control starts with unless the
page says otherwise. What only the page needs is written here, one `Field` per block in the
page's order: the place it goes (index.html holds `@FIELDS:place@` there, tools/build.py renders
it), the label, the control, a placeholder, a select's choices, the context's shortcuts.

A block's control names its help and its error (aria-describedby), so both are read when it takes
focus; the error's element (`error-<name>`) is where the browser layer writes the option's
InputError.
"""

import html
from dataclasses import dataclass
from typing import Callable

from .. import engines
from ..precision import PRECISIONS
from ..readers import gpu_presets
from .options import DEFAULT_ENGINE, EXACT, OPTION_BY_NAME, OPTIONS

CONTROLS = ("input", "select", "hidden")
# The keyboard a phone shows for an option's kind; words (count, text, list) take the default one.
INPUT_MODES = {"int": "numeric", "decimal": "decimal", "count": "text"}
TYPED_WORDS = frozenset({"count", "text", "list"})          # no autocomplete, no spellcheck
# The weight precisions the page offers (the KV precision offers every one PRECISIONS holds).
WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "nvfp4", "int4", "q8_0", "q4_0")
DEFAULT_GPU = "h100-sxm-80gb"


def gpu_choices() -> list[tuple[str, str]]:
    """Every GPU preset, in the presets' order, with its memory in GiB: the whole GPUs, then the MIG
    instances (a share of one, named by its profile), so the cards people look for come first."""
    table = gpu_presets.gpus().values()
    ordered = [g for g in table if g.mig_of is None] + [g for g in table if g.mig_of is not None]
    return [(g.id, f"{g.name} ({g.memory_bytes / 2 ** 30:,.1f} GiB)") for g in ordered]


def engine_choices() -> list[tuple[str, str]]:
    """Each registered engine as it writes its name, then the exact ideal."""
    return [(name, f"{engines.title(name)} allocates") for name in engines.ENGINES] + [
        (EXACT, "Exact ideal (no engine's rules)")]


def _precision_choices(names) -> list[tuple[str, str]]:
    return [(n, f"{n} (vLLM, packed)" if PRECISIONS[n].packed else f"{n} ({float(PRECISIONS[n].bits_per_element):g} bits)")
            for n in names]


def kv_precision_choices() -> list[tuple[str, str]]:
    return _precision_choices(PRECISIONS)


def weight_precision_choices() -> list[tuple[str, str]]:
    return _precision_choices(WEIGHT_PRECISIONS)


@dataclass(frozen=True)
class Field:
    name: str                        # the option's name: the control's id, name and data-option
    place: str                       # where it goes: index.html's @FIELDS:place@
    label: str = ""                  # a hidden control has none
    control: str = "input"           # input, select, or hidden (a value a pasted log sets)
    placeholder: str | None = None
    value: str | None = None         # the value it starts with; None: the option's default
    choices: tuple[tuple[str, str], ...] = ()        # a select's (value, label), first
    listed: Callable[[], list[tuple[str, str]]] | None = None   # then these, from the engine's data
    shortcuts: tuple[tuple[str, str], ...] = ()      # (value, label): buttons that type the value
    shortcuts_label: str = ""
    classes: str = ""                # more classes of the block (kind-gqa, kind-mla, wide)
    hidden: bool = False             # shown by the browser layer when it applies
    datalist: str | None = None      # the id of a datalist of suggestions the browser layer fills
    help: str | None = None          # the page's own words, where the option's (the CLI's) do not fit here

    @property
    def option(self):
        return OPTION_BY_NAME[self.name]

    @property
    def start(self) -> str | None:
        return self.value if self.value is not None else self.option.default


FIELDS = (
    # A custom model's dimensions (the page's "Custom dimensions"), after the attention kind.
    Field("layers", "custom", "Layers", value="32"),
    Field("kv-heads", "custom", "KV heads", value="8", classes="kind-gqa"),
    Field("head-dim", "custom", "Head dim", value="128", classes="kind-gqa"),
    Field("attention-heads", "custom", "Query heads", placeholder="optional", classes="kind-gqa"),
    Field("sliding-window", "custom", "Sliding window (tokens, optional)", classes="kind-gqa"),
    Field("hidden-size", "custom", "Hidden size (optional)", placeholder="for the weights", classes="kind-gqa"),
    Field("mlp-size", "custom", "MLP size (optional)", placeholder="intermediate_size", classes="kind-gqa"),
    Field("vocab-size", "custom", "Vocabulary size (optional)", placeholder="vocab_size", classes="kind-gqa"),
    Field("mla-rank", "custom", "MLA latent (kv_lora_rank)", value="512", classes="kind-mla", hidden=True),
    Field("mla-rope-dim", "custom", "MLA rope dim", value="64", classes="kind-mla", hidden=True),
    # What a pasted log measured: set by the browser layer from the log, never typed.
    Field("loaded-weights-gib", "measured", control="hidden", value=""),
    Field("activation-gib", "measured", control="hidden", value=""),
    Field("non-torch-gib", "measured", control="hidden", value=""),
    Field("cudagraph-gib", "measured", control="hidden", value=""),
    Field("measured-with", "measured", control="hidden", value=""),
    # Workload and hardware.
    Field("context", "workload", "Context length (tokens)", shortcuts_label="Context shortcuts",
          shortcuts=(("2048", "2K"), ("8192", "8K"), ("32768", "32K"), ("131072", "128K"))),
    Field("batch", "workload", "Concurrent requests"),
    Field("kv-dtype", "workload", "KV precision", "select", choices=(("", "Model's dtype"),),
          listed=kv_precision_choices),
    Field("gpu", "workload", "GPU", "select", value=DEFAULT_GPU, choices=(("", "None (KV sizes only)"),),
          listed=gpu_choices),
    Field("engine", "workload", "Size as", "select", value=DEFAULT_ENGINE, listed=engine_choices,
          help="The engine whose allocation the figures follow, release by release: vLLM, SGLang or llama.cpp. "
               "The exact ideal follows no engine's rules: what the cache alone takes."),
    Field("engine-version", "workload", "Engine release", placeholder="newest modelled"),
    Field("gpus", "workload", "GPUs per model copy"),
    # Advanced: parallelism, memory, weights, prefix, blocks.
    Field("tp", "advanced", "Tensor parallel (tp)", placeholder="gpus / (pp x dp)"),
    Field("pp", "advanced", "Pipeline parallel (pp)"),
    Field("dp", "advanced", "Data parallel (dp)"),
    Field("ep", "advanced", "Expert parallel", "select",
          choices=(("", "off (experts sliced by tp)"), ("on", "on (experts whole over tp x dp)"))),
    # Blank, not the option's 1 (the exact ideal's): each engine's own default applies.
    Field("memory-utilization", "advanced", "Memory utilization", value="",
          placeholder="the engine's default (1 for the exact ideal)"),
    Field("vllm-entry", "advanced", "vLLM started by", "select",
          choices=(("", "vllm serve"), ("llm", "the LLM() class"))),
    Field("vllm-runner", "advanced", "vLLM runner", "select",
          choices=(("", "auto: from the architecture"), ("pooling", "pooling: embedding, reranker, reward"),
                   ("generate", "generate"))),
    Field("enforce-eager", "advanced", "CUDA graphs (vLLM)", "select",
          choices=(("", "captured (the default)"), ("on", "none: --enforce-eager"))),
    Field("max-cudagraph-capture-size", "advanced", "Largest CUDA-graph batch (vLLM)",
          placeholder="vLLM's default"),
    Field("prefix-caching", "advanced", "Prefix caching (vLLM)", "select",
          choices=(("", "the release's default"), ("on", "on: --enable-prefix-caching"),
                   ("off", "off: --no-enable-prefix-caching"))),
    Field("mamba-ssm-dtype", "advanced", "Hybrid state dtype (SSM)", "select",
          choices=(("", "the config's mamba_ssm_dtype, else the model's"), ("fp32", "float32"),
                   ("bf16", "bfloat16"), ("fp16", "float16"))),
    Field("vllm-engine", "advanced", "vLLM engine (0.8-0.10)", "select",
          choices=(("", "the release's default"), ("v1", "V1"), ("v0", "V0 (VLLM_USE_V1=0)"))),
    Field("memory-in-use-gib", "advanced", "Memory in use at start (GiB, SGLang)", placeholder="its CUDA context"),
    Field("flash-attn", "advanced", "Flash attention (llama.cpp)", "select",
          choices=(("", "Its default"), ("on", "On"), ("off", "Off"))),
    Field("n-gpu-layers", "advanced", "Layers on the GPU (llama.cpp -ngl)", placeholder="all"),
    Field("n-cpu-moe", "advanced", "MoE layers with experts on the CPU (llama.cpp)", placeholder="0"),
    Field("tensor-split", "advanced", "Layer split over the GPUs (llama.cpp -ts)", placeholder="by free memory: even"),
    Field("gpu-memory-gib", "advanced", "GPU memory (GiB, optional)", placeholder="from the GPU"),
    Field("weights-dtype", "advanced", "Weights precision", "select", choices=(("", "Model's dtype"),),
          listed=weight_precision_choices),
    Field("params", "advanced", "Parameters (optional)", placeholder="from the preset, or e.g. 7.6B"),
    Field("weights-bytes", "advanced", "Weights (bytes, exact, optional)", placeholder="from a checkpoint's headers"),
    Field("layer-weights-bytes", "advanced", "Weights by layer (bytes, from files, optional)",
          placeholder="split evenly"),
    Field("weights-gib", "advanced", "Weights (GiB, optional)", placeholder="params x precision"),
    Field("overhead-gib", "advanced", "Overhead per GPU (GiB)"),
    Field("kv-memory-gib", "advanced", "KV memory per GPU from your log (GiB, optional)", placeholder="estimated"),
    Field("prompt-tokens", "advanced", "Prompt (tokens, optional)", placeholder="the whole context"),
    Field("prefill-chunk", "advanced", "Prefill chunk (tokens, optional)", placeholder="the engine's default"),
    Field("kv-dtype-v", "advanced", "V cache precision (llama.cpp)", "select", choices=(("", "Same as KV precision"),),
          listed=kv_precision_choices),
    Field("kv-dtype-skip-layers", "advanced", "Layers kept in the model's dtype (vLLM)",
          placeholder="none, e.g. 0,1,sliding_window"),
    Field("hybrid-kv-cache-manager", "advanced", "Hybrid KV cache manager (vLLM)", "select",
          choices=(("", "vLLM's rule (the default)"), ("off", "off: --disable-hybrid-kv-cache-manager"),
                   ("on", "on (chunked attention: its environment variable)"))),
    Field("kv-connector", "advanced", "KV connector (vLLM --kv-transfer-config)", placeholder="none, e.g. NixlConnector"),
    Field("prefix-tokens", "advanced", "Shared prefix (tokens)"),
    Field("block-size", "advanced", "PagedAttention block (tokens, optional)", placeholder="off"),
    # Production, one place per part (each under its own heading in index.html).
    Field("draft-model", "draft", "Draft model (preset or repo id)", placeholder="none, e.g. meta-llama/Llama-3.2-1B",
          datalist="draft-presets"),
    Field("mtp", "draft", "MTP heads (the model's own)", "select",
          choices=(("", "off"), ("on", "on: the model's multi-token-prediction heads"))),
    Field("spec-tokens", "draft", "Speculative tokens per step", placeholder="the engine's default"),
    Field("max-loras", "lora", "LoRA adapters at once (slots)", placeholder="none"),
    Field("max-lora-rank", "lora", "Max LoRA rank", placeholder="vLLM's 16, with slots"),
    Field("offload-gib", "offload", "KV offload tier (GiB of host memory)", placeholder="none"),
    Field("offload-backend", "offload", "Offload backend", "select",
          choices=(("", "the engine's own (native)"), ("native", "native: vLLM CPU offload, SGLang HiCache"),
                   ("lmcache", "LMCache"))),
    Field("offload-link", "offload", "Offload link (for the time to bring a prefix back)", "select",
          choices=(("", "none (no time given)"), ("pcie4", "PCIe Gen4 x16"), ("pcie5", "PCIe Gen5 x16"),
                   ("nvme", "NVMe"))),
    Field("host-memory-gib", "offload", "Host memory per node (GiB, optional)", placeholder="not checked"),
    Field("prefix-hit-rate", "prefix-hits", "Prefix hit rate (0 to 1)", placeholder="none; with Shared prefix in Advanced"),
    Field("mm-encoder-tp-mode", "multimodal", "Vision encoder under tensor parallel", "select",
          choices=(("", "the engine's default"), ("weights", "weights: split over tp"),
                   ("data", "data: whole on every GPU"))),
    Field("language-model-only", "multimodal", "Serve text-only (vLLM)", "select",
          choices=(("", "with the vision tower (the default)"), ("on", "text-only: --language-model-only"))),
    Field("limit-mm-per-prompt", "multimodal", "Items a prompt (vLLM --limit-mm-per-prompt)",
          placeholder="its default, such as image=1,video=0"),
    Field("mmproj-bytes", "multimodal", "Projector (mmproj) bytes (llama.cpp, optional)",
          placeholder="from its GGUF header",
          help="llama.cpp: the multimodal projector's (--mmproj) tensor bytes; Open files... reads them from "
               "its GGUF header, here in this tab."),
    # What do I need? (the plan's own fieldset)
    Field("rate", "plan", "Request rate (requests/s, optional)", placeholder="the concurrent requests above"),
    Field("output-tokens", "plan", "Output tokens per request", placeholder="with a rate"),
    Field("plan-gpus", "plan", "GPU types to consider", placeholder="every GPU the engine runs on"),
    Field("plan-max-gpus", "plan", "Most GPUs"),
    Field("plan-kv-dtypes", "plan", "KV precisions to try", placeholder="the KV precision above"),
    Field("plan-weights-dtypes", "plan", "Weight precisions to try", placeholder="the weights precision above"),
    Field("prices", "plan", "Prices (USD per GPU-hour)", placeholder="h100-sxm-80gb=2.49, h200-141gb=3.50",
          classes="wide", help="What you pay per GPU-hour in USD, GPU=USD comma-separated; a family's name "
                               "(H100=2.49) prices each of its presets, a narrower name's price wins; no price is "
                               "built in."),
    # Several models on these GPUs (its own fieldset)
    Field("also", "together", "Other servers on these GPUs", placeholder="model:Qwen/Qwen3-14B,memory-utilization:0.45",
          classes="wide", help="One set of name:value pairs per server (model, engine, engine-version, "
                               "memory-utilization, context, batch, kv-dtype, weights-dtype, tp, pp), the sets "
                               "separated by ;. A server takes this one's GPUs and, unless it "
                               "sets its own, its engine, context and requests."),
)
FIELD_BY_NAME = {f.name: f for f in FIELDS}
PLACES = tuple(dict.fromkeys(f.place for f in FIELDS))
# Options index.html writes itself, as structures no field block has.
PAGE_OWN = {
    "model": "the preset combobox: a search box, its listbox and the hidden preset id",
    "hf-config": "the pasted or opened config.json (a textarea beside the log's, with its own help)",
    "unit": "a radio group (GiB or GB) in View and share",
}
# Options the page has no control for: they come in a link or on the CLI only.
NOT_ON_PAGE = {
    "draft-hf-config": "a draft's config.json, which the CLI reads from a file and a link carries",
}


def _text(value: str) -> str:
    return html.escape(value, quote=False)


def _attr(value: str) -> str:
    return html.escape(value, quote=False).replace('"', "&quot;")


def _control(field: Field) -> str:
    """The control's start tag: id, name and data-option the option's name, then what its kind and
    the page give it, in one order (list, inputmode, autocomplete, spellcheck, value, placeholder)."""
    name, kind = field.name, field.option.kind
    attrs = [f'id="{name}"', f'name="{name}"', f'data-option="{name}"']
    if field.control == "hidden":
        return f'<input type="hidden" {" ".join(attrs)} value="{_attr(field.start or "")}">'
    if field.control == "select":
        return f'<select {" ".join(attrs)} aria-describedby="help-{name} error-{name}">'
    if field.datalist:
        attrs.append(f'list="{field.datalist}"')
    if kind in INPUT_MODES:
        attrs.append(f'inputmode="{INPUT_MODES[kind]}"')
    if kind in TYPED_WORDS:
        attrs += ['autocomplete="off"', 'spellcheck="false"']
    if field.start is not None:
        attrs.append(f'value="{_attr(field.start)}"')
    if field.placeholder is not None:
        attrs.append(f'placeholder="{_attr(field.placeholder)}"')
    attrs.append(f'aria-describedby="help-{name} error-{name}"')
    return f'<input {" ".join(attrs)}>'


def _option(value: str, label: str, selected: bool) -> str:
    return f'<option value="{_attr(value)}"{" selected" if selected else ""}>{_text(label)}</option>'


def render_field(field: Field, indent: str = "") -> str:
    """One block as HTML: on one line when it is a label and a control, on several when the control
    holds choices or shortcuts. A hidden control is the input alone."""
    name = field.name
    if field.control == "hidden":
        return indent + _control(field)
    opening = f'<div class="{" ".join(("field", *field.classes.split()))}"{" hidden" if field.hidden else ""}>'
    label = f'<label for="{name}">{_text(field.label)}</label>'
    help_ = f'<small class="help" id="help-{name}" data-help="{name}">{_text(field.help or field.option.help)}</small>'
    error = f'<span class="error" id="error-{name}"></span>'
    datalist = f'<datalist id="{field.datalist}"></datalist>' if field.datalist else ""
    if field.control == "input" and not field.shortcuts:
        return indent + opening + label + _control(field) + datalist + help_ + error + "</div>"
    inner = indent + "  "
    lines = [indent + opening, inner + label, inner + _control(field) + datalist]
    if field.control == "select":
        choices = [*field.choices, *(field.listed() if field.listed else ())]
        lines += [inner + "  " + _option(value, label, value == field.start) for value, label in choices]
        lines.append(inner + "</select>")
    if field.shortcuts:
        lines.append(inner + f'<span class="shortcuts" role="group" aria-label="{_attr(field.shortcuts_label)}">')
        lines.append(inner + "  " + "".join(f'<button type="button" data-{name}="{_attr(value)}" data-until-ready '
                                            f'disabled>{_text(label)}</button>' for value, label in field.shortcuts))
        lines.append(inner + "</span>")
    lines += [inner + help_, inner + error, indent + "</div>"]
    return "\n".join(lines)


def render_place(place: str, indent: str = "") -> str:
    """The blocks of one place, in the page's order, each line indented as the marker was."""
    if place not in PLACES:
        raise KeyError(f"no field goes at {place!r}; the places are {', '.join(PLACES)}")
    return "\n".join(render_field(f, indent) for f in FIELDS if f.place == place)


def problems() -> list[str]:
    """The table against the schema: a name that is no option, an option with two blocks or none
    and no reason, a select without choices, a control with no label."""
    found, names = [], [f.name for f in FIELDS]
    options = [o.name for o in OPTIONS]
    found += [f"{n}: two blocks" for n in sorted({n for n in names if names.count(n) > 1})]
    found += [f"{n}: not an option" for n in names + [*PAGE_OWN, *NOT_ON_PAGE] if n not in OPTION_BY_NAME]
    for n in options:
        homes = (n in FIELD_BY_NAME) + (n in PAGE_OWN) + (n in NOT_ON_PAGE)
        if homes != 1:
            found.append(f"{n}: {'no block and no reason' if not homes else 'a block and a reason'}")
    for f in FIELDS:
        if f.control not in CONTROLS:
            found.append(f"{f.name}: control {f.control!r} is not one of {', '.join(CONTROLS)}")
        if (f.control == "select") != bool(f.choices or f.listed):
            found.append(f"{f.name}: choices belong to a select, and a select needs them")
        if bool(f.label) != (f.control != "hidden"):
            found.append(f"{f.name}: a shown control needs a label, a hidden one has none")
    return found
