"""`kvcalc`: the engine on the command line. Bad input exits 2 with one line naming the option."""

import argparse
import json
import os
import sys

from .readers import architectures, gguf, gpu_presets, presets
from .reports import link
from .reports import colocation
from .inputs import failed_start, log_flow
from .reports import failure_report, fixes as start_fixes
from .planning import plan
from .planning.ask import DEFAULT_MAX_GPUS, PLAN_INPUTS, ask_from
from .readers.checkpoint_files import weights_from_paths
from .errors import InputError
from .readers.hfconfig import MAX_CONFIG_BYTES, parse_config_text
from .evaluation import evaluate, sized_as, unexpected
from .inputs.options import DEFAULT_ENGINE, EXACT, EXACT_ALIASES, MODEL_INPUTS, OPTIONS, parse_options
from .engines import engine_name, title as engine_title
from .inputs.startup_log import MAX_LOG_CHARS, implied, log_lines, read_log
from .inputs.scenario import resolve_model
from .readers.safetensors import layer_list
from .units import GIB
from .reports.export import FORMATS, export
from .engines import REGISTRY
from .serving.launch import launch
from .command_line import serving
from .planning.plan_report import plan_json, plan_table, pointer, withheld
from .reports.report import table, to_json
from .reports.verdict import verdict


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise InputError("usage", message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvcalc", description="Exact KV-cache and serving-capacity calculator.")
    for group_name in ("model", "workload", "deployment", "engine", "serving", "plan", "view"):
        group = parser.add_argument_group(group_name)
        if group_name == "plan":
            group.add_argument("--plan", action="store_true",
                               help="what do I need? For each GPU type the smallest deployment that fits these "
                                    "inputs (as --engine sizes them), by GPU count then price: a table, or key "
                                    "plan with --json")
            group.add_argument("--plan-all", action="store_true",
                               help="--plan with every GPU count and layout tried, not only the smallest per GPU type")
            group.add_argument("--price", metavar="GPU=USD", action="append",
                               help="what you pay per GPU-hour for a GPU preset, e.g. h100-sxm-80gb=2.49, or for "
                                    "each preset of a family, H100=2.49 (a narrower name's price wins); repeat for "
                                    "each GPU (the link's prices); no price is built in")
        for option in OPTIONS:
            if option.group != group_name:
                continue
            metavar = {"int": "N", "decimal": "X", "config": "PATH"}.get(option.kind, "NAME")
            help_text = option.help.replace("%", "%%")
            if option.default is not None:
                help_text += f" (default {option.default})"
            if option.bare is not None:
                group.add_argument(f"--{option.name}", dest=option.name, metavar=metavar, help=help_text,
                                   nargs="?", const=option.bare)
            else:
                group.add_argument(f"--{option.name}", dest=option.name, metavar=metavar, help=help_text,
                                   **({"action": "append"} if option.repeat else {}))
    files = parser.add_argument_group("checkpoint files (headers only; nothing else is read)")
    files.add_argument("--gguf", metavar="PATH", help="a GGUF file: the model's shape from its metadata, the "
                                                     "exact weights from its tensor table")
    files.add_argument("--weights-file", metavar="PATH", action="append",
                       help="a .safetensors file (repeat for each shard) or a model.safetensors.index.json: "
                            "the exact weights in place of params x precision")
    files.add_argument("--mmproj", metavar="PATH", help="llama.cpp's multimodal projector GGUF: its tensor bytes "
                                                       "(the header's table), held whole on the first GPU")
    files.add_argument("--from-log", metavar="PATH", help="an engine's start-up log (- for standard input): the "
                                                        "inputs it implies, each said with its line; options given "
                                                        "here win over it (e.g. --model for a local path)")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object (same as --format json)")
    out.add_argument("--explain", "-v", action="store_true",
                     help="the table with every figure, the arithmetic and why each engine figure is what it is "
                          "(the default is the short answer: the verdict, the headline figures, what the engine "
                          "prints and its launch command)")
    out.add_argument("--format", choices=("table", "log") + FORMATS, default="table",
                     help="table (default), json, csv, markdown, or log: the lines the chosen --engine "
                          "prints at start-up, with these numbers")
    out.add_argument("--launch", choices=tuple(REGISTRY), help="print the serving engine's launch command instead")
    out.add_argument("--link", metavar="URL", help="read the inputs from a share link (its #fragment); "
                                                  "@FILE reads the link from a file and - from standard "
                                                  "input (a long link is past the command line's limit); "
                                                  "options given here override it")
    out.add_argument("--list-models", action="store_true", help="list the model presets")
    out.add_argument("--list-gpus", action="store_true", help="list the GPU presets")
    out.add_argument("--list-architectures", action="store_true",
                     help="list the config.json architectures read (vLLM's registry): exact, refused or not yet")
    return parser


def _read_bytes(path: str, limit: int, field: str) -> bytes:
    """Up to limit + 1 bytes of a file, or of standard input for "-": one more says it is too long."""
    try:
        if path == "-":
            return sys.stdin.buffer.read(limit + 1)
        with open(path, "rb") as fh:
            return fh.read(limit + 1)
    except OSError as e:
        raise InputError(field, f"cannot read {path!r}: {e.strerror}") from None


def _read_config(path: str, field: str = "hf-config") -> dict:
    """A config.json file, its errors naming its own option (--draft-hf-config for a draft's)."""
    data = _read_bytes(path, MAX_CONFIG_BYTES, field)
    return parse_config_text(data, field)


def _read_link(value: str) -> str:
    """The link itself, or read from @FILE or - (standard input): a link with a pasted config can
    be longer than the argument list allows (128 KiB on Linux)."""
    if value != "-" and not value.startswith("@"):
        return value
    limit = link.MAX_FRAGMENT_CHARS + 4096          # the fragment's limit and a URL's other parts
    data = _read_bytes("-" if value == "-" else value[1:], limit, "link")
    if len(data) > limit:
        raise InputError("link", f"is longer than {limit:,} bytes; a share link is at most "
                                 f"{link.MAX_FRAGMENT_CHARS:,} characters after its #")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InputError("link", "is not UTF-8 text") from None


def _read_log_text(path: str) -> str:
    limit = MAX_LOG_CHARS
    data = _read_bytes(path, limit, "from-log")
    if len(data) > limit:
        raise InputError("from-log", f"is longer than {limit >> 20} MiB; give the start-up, its first few thousand "
                                     "lines")
    return data.decode("utf-8", errors="replace")


def _engine_given(text):
    """The engine chosen beside the log, which the log must be of (the exact ideal takes any)."""
    if text is None or str(text).strip().lower() in EXACT_ALIASES:
        return None
    return engine_name(text)


def _with_layer_weights(raw: dict) -> dict:
    """The shards' weights by layer, once the model says how many layers there are; left out
    when the shards do not cover them all (the total still stands)."""
    shards = raw.pop("layer-weights-bytes")
    values, errors = parse_options(raw)
    if errors:
        return raw
    try:
        model, _ = resolve_model(values)
    except InputError:
        return raw
    listed = layer_list(shards, len(model.layers))
    return dict(raw, **{"layer-weights-bytes": listed}) if listed else raw


def run(argv: list[str], stdout=sys.stdout, stderr=sys.stderr) -> int:
    prices = None
    try:
        args = vars(build_parser().parse_args(argv))
        _refuse_empty(args)
        if args.pop("list_models"):
            for entry in presets.model_entries():
                print(f"{entry['id']:48} {entry['name']}", file=stdout)
            return 0
        if args.pop("list_architectures"):
            table = architectures.rows()
            width = max(len(name) for name, _ in table)
            for name, row in table:
                print(f"{name:{width}} {row['status']:8} {architectures.summary(row)}", file=stdout)
            return 0
        if args.pop("list_gpus"):
            table = list(gpu_presets.gpus().values())
            ids, names = max(len(g.id) for g in table), max(len(g.name) for g in table)
            # The whole GPUs first; the MIG instances after them, under a line saying what they are.
            whole, mig = [g for g in table if g.mig_of is None], [g for g in table if g.mig_of is not None]
            for gpu in whole + mig:
                if mig and gpu is mig[0]:
                    print("MIG instances (each one device, a share of the GPU its id begins with; "
                          "memory as nvidia-smi mig -lgip reports it):", file=stdout)
                print(f"{gpu.id:{ids}} {gpu.name:{names}} {gpu.memory_bytes / GIB:8.2f} GiB "
                      f"{gpu.bandwidth_bytes_per_s / 1e12:6.2f} TB/s", file=stdout)
            return 0
        as_json, link_url = args.pop("json"), args.pop("link")
        fmt, engine, explain = args.pop("format"), args.pop("launch"), args.pop("explain")
        if as_json and fmt not in ("table", "json"):
            raise InputError("format", f"--json and --format {fmt} ask for two outputs; give one")
        if engine is not None and (as_json or fmt != "table"):
            raise InputError("launch", "prints a command, not results: leave out --json and --format")
        fmt = "json" if as_json else fmt
        everything = args.pop("plan_all")
        planning = args.pop("plan") or everything
        prices, prices_option = args.pop("price"), "prices" if args.get("prices") else "price"
        if planning and engine is not None:
            raise InputError("plan", "prints the deployments, not a command: leave out --launch")
        if planning and fmt not in ("table", "json"):
            raise InputError("plan", f"prints a table or --json, not --format {fmt}")
        if prices:
            args["prices"] = ",".join(([args["prices"]] if args.get("prices") else []) + prices)
        raw: dict = {}
        if link_url is not None:
            if link_url == "-" and args.get("hf-config") == "-":
                raise InputError("link", "and --hf-config cannot both read standard input; give one a file")
            fragment = _read_link(link_url).partition("#")[2]
            raw, ignored = link.decode(fragment)
            for key, why in ignored:
                print(f"kvcalc: link: ignored {key}: {why}", file=stderr)
            raw.setdefault("engine", EXACT)     # a link without an engine keeps meaning the exact ideal
        gguf_path, weight_files, log_path = args.pop("gguf"), args.pop("weights_file"), args.pop("from_log")
        mmproj_path = args.pop("mmproj")
        given = {name: value for name, value in args.items() if value is not None}
        if mmproj_path is not None:
            if "mmproj-bytes" in given:
                raise InputError("mmproj", "give the projector once: --mmproj FILE or --mmproj-bytes N")
            given["mmproj-bytes"] = str(gguf.mmproj_bytes(mmproj_path))
        reading = failed = None
        if log_path is not None:
            if log_path == "-" and (link_url == "-" or given.get("hf-config") == "-"):
                raise InputError("from-log", "and another option cannot both read standard input; give one a file")
            log_text = _read_log_text(log_path)
            failed = failed_start.read(log_text, _engine_given(given.get("engine")))
            try:
                reading = read_log(log_text, _engine_given(given.get("engine")))
            except InputError as e:         # the reader's "log" is this option
                if failed.failure is None:
                    said = failed.message if failed.other_error is not None else e.message
                    raise InputError("from-log", said) if e.field == "log" else e from None
            model_given = any(name in given for name in MODEL_INPUTS) or gguf_path is not None
            if reading is None and not model_given:
                # Only the error's lines: what they print is all there is to go on.
                return _failure_only(failed, {"engine": failed.engine or DEFAULT_ENGINE, **given}, fmt, stdout)
            if reading is None:
                # Only the error's lines, and the model given: sized as any question, with what
                # the failure printed as inputs (its context, its sequences, its share), and the
                # failure and its fixes under the verdict (an input refused is said, not lost).
                _failure_inputs(failed, given, fmt, engine)
                raw.update({name: str(failed.failure.figure(figure)) for figure, name in FAILURE_INPUTS
                            if failed.failure is not None and failed.failure.figure(figure) is not None})
                raw["engine"] = _failed_engine(failed) or raw.get("engine") or DEFAULT_ENGINE
            elif any(name in given for name in MODEL_INPUTS) or gguf_path is not None:
                raw.update({k: v for k, v in reading.values.items() if k != "model"})
            else:
                raw.update(reading.values)
        if gguf_path is not None:
            if any(name in given for name in MODEL_INPUTS):
                raise InputError("gguf", "give one model: --gguf, or --model, --hf-config or custom dimensions")
            given.update(gguf.inputs(gguf.read_file(gguf_path)))
        if weight_files:
            total, shards = weights_from_paths(weight_files)
            given["weights-bytes"] = str(total)
            if shards:
                given["layer-weights-bytes"] = shards
        if any(name in given for name in MODEL_INPUTS):
            # A model named here replaces the link's model, whichever way each names it.
            raw = {k: v for k, v in raw.items() if k not in MODEL_INPUTS}
        for name, value in given.items():
            raw[name] = _read_config(value, name) if name in ("hf-config", "draft-hf-config") and isinstance(value, str) else value
        if isinstance(raw.get("layer-weights-bytes"), list):
            raw = _with_layer_weights(raw)
        if reading is not None and any(name in given for name in MODEL_INPUTS):
            # What the log's figures imply for the model given, as the page reads them once the
            # model is chosen over a log naming none: an input given here stays the user's.
            again = implied(reading, raw)
            raw.update({k: v for k, v in again.values.items() if k not in given and k not in MODEL_INPUTS})
            reading = again
        raw.setdefault("engine", DEFAULT_ENGINE)    # nothing named one: as the page sizes, the newest vLLM
        if raw.get("also") and reading is not None:
            raise InputError("also", "sizes servers from their inputs, not beside a log's measured start: "
                                     "leave out --from-log, or --also")
        if reading is not None and not any(name in raw for name in MODEL_INPUTS):
            refusal = log_flow.cli_refusal(reading)     # never sized as a model the log did not run
            if refusal is not None and failed is not None and failed.failure is not None:
                for line in log_lines(reading, None):
                    print(f"# {line}", file=stderr)
                print(f"# {refusal.message}", file=stderr)
                return _failure_only(failed, raw, fmt, stdout)
            if refusal is not None:
                raise refusal
        if raw.get("also"):
            # Servers beside this one on its GPU (--also): each sized, then together, a launch command
            # each (reports/colocation); the plan, --launch and the exports stay the single view's.
            if planning or engine is not None or fmt not in ("table", "json"):
                raise InputError("also", "answers with each server and their verdict together, as a table or "
                                         "--json: leave out --plan, --launch and --format")
            found = colocation.colocate_raw(raw)
            unit = str(raw.get("unit", "gib")).lower()
            stdout.write(colocation.to_text(found, unit) if fmt == "table" else
                         json.dumps(colocation.to_json(found, unit), indent=2) + "\n")
            return 0
        output = _plan(raw, everything, fmt) if planning else _single(raw, reading, fmt, engine, stderr, failed,
                                                                      explain)
    except InputError as e:
        if e.field == "prices" and prices:
            e = InputError(prices_option, e.message)    # --price was typed: name it so
        return _refuse(e, stderr)
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as e:      # noqa: BLE001 - the one boundary: a refusal, never a traceback
        return _refuse(unexpected(e, locals().get("raw") or {}), stderr)
    out, notes = output
    stdout.write(out)
    for note in notes:
        print(f"# {note}", file=stderr)
    return 0


# The figures a failure prints that are inputs of the start it refused: (figure, input).
FAILURE_INPUTS = (("context", "context"), ("batch", "batch"), ("utilization", "memory-utilization"))


def _failure_inputs(failed, given: dict, fmt: str, launch_engine) -> None:
    """A failed start read from its error lines alone is answered as a table or JSON, by the
    engine whose words it printed."""
    if fmt not in ("table", "json") or launch_engine is not None:
        raise InputError("format" if launch_engine is None else "launch",
                         "a failed start is answered as a table or --json: leave out --format and --launch")
    named, printed = given.get("engine"), _failed_engine(failed)
    if printed and named and engine_name(str(named)) != printed:
        raise InputError("engine", f"the failed start is {engine_title(printed)}'s, not "
                                   f"{engine_title(engine_name(str(named)))}'s: leave out --engine, or give its log")


def _failed_engine(failed) -> str | None:
    """The engine whose words the failure printed (its own rules named it), else the log's."""
    return (failed.failure.engine if failed.failure is not None else None) or failed.engine


def _refuse_empty(args: dict) -> None:
    """An option typed with an empty value (--gpu "") is a mistake said in one line naming it,
    never dropped as if not given (a form's empty field is; a link says "ignored")."""
    for dest, value in args.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and not item.strip():
                raise InputError(dest.replace("_", "-"), "is empty; give it a value, or leave the option out")


def _failure_only(failed, values: dict, fmt: str, stdout) -> int:
    """A failed start whose model is not known here: the failure and the fixes its own figures
    give, nothing sized as another model."""
    if fmt not in ("table", "json"):
        raise InputError("format", f"a failed start is answered as a table or --json, not --format {fmt}")
    found = start_fixes.for_failure(failed.failure, values) if failed.read else []
    if fmt == "json":
        stdout.write(json.dumps({"failed_start": failure_report.failed_json(failed, found),
                                 "fixes": failure_report.fixes_json(found)}, indent=2) + "\n")
    else:
        stdout.write(failure_report.text(failed, found, sized=any(name in values for name in MODEL_INPUTS)))
    return 0


def _single(raw: dict, reading, fmt: str, engine: str | None, stderr, failed=None, explain: bool = True):
    """The single view: one deployment evaluated, rendered; a failed start's cause and fixes
    above it, and a configuration that does not start with its fixes."""
    evaluation = evaluate(raw)
    if evaluation.errors:
        raise evaluation.errors[0]
    failed = failed if failed is not None and failed.failure is not None else None
    if reading is not None:
        for line in log_lines(reading, evaluation) + _log_summary(reading, evaluation):
            print(f"# {line}", file=stderr)
        empty = log_flow.no_cache(reading)
        if empty is not None and "kv-memory-gib" not in raw and failed is None:
            raise InputError("from-log", empty)     # its engine refused to start: no estimate stands in
    if fmt == "log" and evaluation.engine is None:
        raise InputError("format", "log prints an engine's start-up lines: choose one with --engine")
    if fmt == "log" and not evaluation.engine.log:
        raise InputError("format", "the engine's start-up lines need its KV memory: give a GPU and the "
                                   "weights, or --kv-memory-gib")
    command = None
    if engine is not None:
        command = launch(evaluation.scenario, engine, sized_as(evaluation, engine))
        if command.command is None:
            raise InputError("launch", command.notes[0])
    if any(name in evaluation.values for name in PLAN_INPUTS):
        ask_from(evaluation.values)     # the plan's own inputs refused alike, fitting or not
    served = log_flow.served_path(reading) if reading is not None else None
    if failed is not None:
        found = start_fixes.for_failure(failed.failure, raw, served) if failed.read else []
    else:
        found = start_fixes.fixes(raw) if fmt in ("table", "json") and command is None else []
    return _render(evaluation, fmt, command, failed, found, explain, served)


def _log_summary(reading, evaluation) -> list[str]:
    """What the page's summary says of a log: its figures these inputs do not give (beyond the
    log's rounding), and the layout it leaves unsaid."""
    lines = []
    empty = log_flow.no_cache(reading)
    if empty is not None:
        lines.append(empty)
    text = log_flow.mismatch_text(log_flow.mismatches(reading, evaluation))
    if text:
        lines.append(text)
    user_gave = any(name in evaluation.values and name not in reading.values for name in log_flow.LAYOUT_GIVEN)
    assumed = log_flow.assumed_layout(reading, evaluation, user_gave)
    if assumed:
        options = " and ".join(f"--{name}" for name, _ in assumed)
        lines.append(f"the log does not say its layout ({options}): these figures assume "
                     + ", ".join(f"{name} {value}" for name, value in assumed) + f"; give {options} as its server ran")
    gpu_gave = any(name in evaluation.values and name not in reading.values for name in log_flow.GPU_GIVEN)
    gpu = log_flow.assumed_gpu(reading, evaluation, gpu_gave)
    if gpu:
        lines.append(f"{log_flow.gpu_unsaid(reading)}: the memory checks use the {gpu}; give --gpu as its server ran")
    return lines


def _plan(raw: dict, everything: bool, fmt: str) -> tuple[str, list[str]]:
    """`--plan`: the planner over the inputs (plan.plan), as a table or JSON."""
    values, errors = parse_options(raw)
    if errors:
        raise errors[0]
    chosen = [name for name in ("gpu", "gpus", "tp", "pp", "dp", "ep") if name in values]
    found = plan.plan(values, everything=everything)
    notes = []
    if chosen:
        notes.append(f"the plan chooses the GPU and the layout, so the inputs' {', '.join(chosen)} "
                     f"{'is' if len(chosen) == 1 else 'are'} left out; --plan-gpus limits the GPUs it considers")
    if fmt == "json":
        return json.dumps(plan_json(found), indent=2) + "\n", notes
    return plan_table(found) + "\n", notes


def _what_you_need(evaluation) -> tuple[str | None, str | None]:
    """When the single view does not fit, (what the plan says it needs, as the page's verdict
    names it, or None; why the plan does not size this question, or None). The pointer is
    plan_report.pointer (its own GPU type first, then the plan's best row), computed only on a
    GPU preset and only then (a plan costs a tenth of a second or more); a verdict resting on a
    measured KV memory gets plan_report.withheld's clause instead, the plan answering another
    question; a context past the model's limit gets neither (no deployment helps)."""
    values = evaluation.values
    judged = verdict(evaluation.scenario, evaluation)
    if judged.fits is not False or "context" in judged.reasons:
        return None, None
    why = withheld(evaluation.scenario, evaluation, str(values.get("unit", "gib")).lower())
    if why is not None or "gpu" not in values:
        return None, why
    try:
        best = pointer(plan.plan(values), values)
    except InputError:
        return None, None       # the single view stands; the line is only a pointer
    if best is not None:
        return best, None
    return (f"no deployment of up to {values.get('plan-max-gpus', DEFAULT_MAX_GPUS):,} GPUs fits on any GPU "
            "considered"), None


def _plan_best(evaluation) -> str | None:
    """The plan's pointer alone (see _what_you_need)."""
    return _what_you_need(evaluation)[0]


def _render(evaluation, fmt: str, command, failed=None, found=(), explain: bool = True,
            served: str | None = None) -> tuple[str, list[str]]:
    """(what goes to standard output, notes for standard error), built in full before anything
    is written, so a refusal never follows half an answer."""
    unit = str(evaluation.values.get("unit", "gib")).lower()
    if command is not None:
        return command.command + "\n", list(command.notes)
    if fmt == "table":
        text = table(evaluation, unit, explain, None if explain or failed is not None else _launch_line(evaluation, served))
        best, why = _what_you_need(evaluation)
        line = f"What you need: {best}; kvcalc --plan for every GPU" if best is not None else \
            None if why is None else f"What you need is not sized here: {why}: kvcalc --plan"
        first, _, rest = text.partition("\n")
        indent = len(first) - len(first[len("Verdict"):].lstrip())
        if line is not None:
            first = f"{first}\n{' ' * indent}{line}"
        # The failed start and its fixes right under the verdict, before the figures.
        block = failure_report.text(failed, list(found), start_fixes.contradiction(evaluation), sized=True) \
            if failed is not None else \
            "\n".join(failure_report.fix_lines(list(found))) + "\n" if found else ""
        if block:
            first = f"{first}\n\n{block}"
        return f"{first}\n{rest}\n", []
    if fmt == "json":
        data = to_json(evaluation.scenario, evaluation, unit)
        best, why = _what_you_need(evaluation)
        if best is not None:
            data["plan_best"] = best
        elif why is not None:
            data["plan_best_withheld"] = why
        if failed is not None:
            data["failed_start"] = failure_report.failed_json(failed, list(found), start_fixes.contradiction(evaluation))
        if failed is not None or found:
            data["fixes"] = failure_report.fixes_json(list(found))
        return json.dumps(data, indent=2) + "\n", []
    if fmt == "log":
        return "".join(line + "\n" for line in evaluation.engine.log), []
    return export(evaluation.scenario, evaluation, fmt, unit), []


def _launch_line(evaluation, served: str | None = None) -> str | None:
    """The evaluated engine's launch command for the short answer, with its notes, naming the
    checkpoint a log served (`served`); why it is not written, where the engine cannot write one
    for these inputs. None for the exact ideal, or where they do not start (the fixes stand instead)."""
    if evaluation.engine is None or evaluation.engine.starts is False:
        return None
    name = evaluation.engine.engine
    try:
        command = launch(evaluation.scenario, name, sized_as(evaluation, name))
    except InputError as e:
        return f"not written: {e.message}"
    if command.command is None:
        return "not written: " + (command.notes[0] if command.notes else "the engine cannot start these inputs")
    text = serving(command.command, evaluation.scenario, served)
    return "\n".join([text] + [f"  # {note}" for note in command.notes])


def _refuse(e: InputError, stderr) -> int:
    option = e.field if e.field in ("usage",) or "." in e.field or "_" in e.field else f"--{e.field}"
    print(f"kvcalc: error: {option}: {e.message}", file=stderr)
    return 2


def main() -> None:
    try:
        code = run(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`kvcalc --list-models | head -1`): say nothing, as cat does.
        # Python would complain again flushing stdout at exit, so point it at devnull first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
