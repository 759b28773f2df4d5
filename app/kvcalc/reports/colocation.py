"""Several models on one GPU or node (issue 41): each server sized on its own, then whether they
fit together as each engine shares memory, with a launch command each on its own port.

The API, for the CLI's `--also` and a page's section:

    colocate(raw, also) -> Colocation

`raw` is server 1's inputs as `evaluation.evaluate` takes them (its GPU, GPU count and node are
every server's); `also` the other servers' own inputs, one dict each, with the keys
`options.ALSO_KEYS` allows (`options.server_sets` reads them from the `also` option's text). A
server takes the shared GPU inputs (SHARED_KEYS) and, unless it sets its own, server 1's engine,
its release, its context and its batch (INHERITED_KEYS). Each is `evaluate()`d with its own values,
so its figures are its single view's, in the order given (its start order); then the joint verdict
asks each server's engine how it shares (`engines.sharing`, `engines.result.Sharing`):

- vLLM (0.6.5 on for V0, 0.9.1 on for V1): its share is of the whole memory, whatever runs beside
  it; the shares add up to 1 at most (more is refused, naming the server), and the servers fit
  when their shares of the memory PyTorch reports plus each one's CUDA context fit in it;
  releases that count other processes' memory as their own are refused;
- SGLang: its fraction is of the memory free at its start, so a server started after others is
  sized with what they hold as its `memory-in-use-gib`;
- llama.cpp and the exact ideal: each holds what it needs; they fit when it adds up to the memory.

Refused in one line (InputError): a server's own refusal or one that does not start (its model
too big for its share), prefixed with the server's number; shares past 1; a release that cannot
share. What does not fit together is a verdict, not a refusal: `together.fits` False, and its
words say which server is short and by how much.

Worked example (tests/reports/test_colocation.py): Llama 3.1 8B and Qwen3 14B at 0.45 each on one
H100 SXM 80GB, vLLM 0.33.0, 8,192 tokens x 16 requests. vLLM's share is ceil(85,061,827,297 B x
0.45) = 38,277,822,284 B each, plus a CUDA context of 268,435,456 B each: 77,092,515,480 B held
of 85,061,827,297 B, 7,969,311,817 B (7.42 GiB) left: they fit together, and each holds its own
single view's figures (19.54 GiB of KV and 19 requests; 6.72 GiB and 5 requests).
"""

from dataclasses import dataclass
from fractions import Fraction

from ..engines import REGISTRY, memory_utilization, releases, sharing as engine_sharing, title
from ..engines.result import Sharing, torch_total
from ..errors import InputError
from ..evaluation import Evaluation, evaluate, sized_as
from ..inputs.options import SERVER_SEPARATOR, parse_options, server_sets
from ..serving.launch import launch
from ..units import GIB
from ..words import listed, plural, size
from .memory_bar import memory_bar
from .report import to_json as single_json
from .verdict import verdict

# Every server's, from server 1's inputs: they share the GPU, the GPU count and the node.
SHARED_KEYS = ("gpu", "gpu-memory-gib", "gpus", "unit")
# Server 1's unless a server sets its own (engine-version only where the engine is the same).
INHERITED_KEYS = ("engine", "engine-version", "context", "batch")


@dataclass(frozen=True)
class Server:
    """One server as it runs beside the others: its own single view, what it holds on each GPU
    and its launch command on its own port."""
    number: int                 # 1 for the main inputs, 2 on for each `also`, in start order
    values: dict                # the raw inputs it was evaluated with
    evaluation: Evaluation      # its own single view (its figures and its verdict)
    sharing: Sharing            # how its engine shares the GPU
    share: Fraction | None      # its memory share in force ("total" and "free" engines), else None
    in_use_bytes: int           # per GPU: what the servers before it hold when it starts
    held_bytes: int             # per GPU: what it holds once started, its CUDA context too
    port: int | None            # the --port written into its command (None: no command)
    command: str | None         # its launch command, or None (the exact ideal; one that cannot be written)
    command_notes: tuple[str, ...]


@dataclass(frozen=True)
class Together:
    """The joint verdict on each GPU."""
    fits: bool
    memory_bytes: int           # each GPU's memory, as PyTorch reports it where an engine sizes a server
    held_bytes: int             # what the servers hold on each GPU together
    short_server: int | None    # the first server that does not fit beside those before it
    words: str
    notes: tuple[str, ...]      # each engine's rule for sharing, once
    waiting: tuple[int, ...] = ()   # servers that start but hold fewer requests than asked

    @property
    def left_bytes(self) -> int:
        """What is left on each GPU once all have started (negative: how far short)."""
        return self.memory_bytes - self.held_bytes


@dataclass(frozen=True)
class Colocation:
    servers: tuple[Server, ...]
    together: Together


def server_inputs(first: dict, own: dict) -> dict:
    """A server's raw inputs beside server 1 (`first`): the shared GPU inputs, server 1's
    engine, release, context and batch unless it sets its own, and its own values."""
    out = {k: first[k] for k in SHARED_KEYS if k in first}
    for key in INHERITED_KEYS:
        if key in first and key not in own and not (key == "engine-version" and own.get("engine", first.get("engine"))
                                                     != first.get("engine")):
            out[key] = first[key]
    out.update(own)
    return out


def colocate_raw(raw: dict) -> Colocation:
    """colocate() from one set of raw inputs whose `also` holds the other servers (the option's
    text, or a list of sets as the CLI's repeated --also gives them)."""
    text = raw["also"]
    if isinstance(text, (list, tuple)):
        text = SERVER_SEPARATOR.join(text)
    values, errors = parse_options({"also": text})
    if errors:
        raise errors[0]
    return colocate({k: v for k, v in raw.items() if k != "also"}, server_sets(values["also"]))


def colocate(raw: dict, also: list[dict]) -> Colocation:
    """Server 1 (`raw`) and the servers `also`, each sized on its own in the order given, then
    together. Raises InputError for what is refused (the module's docstring)."""
    first = {k: v for k, v in raw.items() if k != "also"}
    if "memory-in-use-gib" in first:
        raise InputError("memory-in-use-gib", "with servers beside this one, the memory each finds in use at its "
                                              "start is what the servers started before it hold; leave it out")
    servers, in_use, shares, memory = [], 0, [], None
    for number, values in enumerate([first] + [server_inputs(first, own) for own in also], start=1):
        evaluation = _evaluated(values, number)
        scenario = evaluation.scenario
        module = REGISTRY[evaluation.engine.engine] if evaluation.engine is not None else None
        rule = engine_sharing(module, scenario)
        if rule.refusal:
            raise InputError("engine-version" if number == 1 else "also", f"server {number}: {rule.refusal}")
        # The smallest base any server is sized on: PyTorch's total where an engine sizes one,
        # which is under nvidia-smi's that the exact ideal takes.
        memory = _memory(evaluation) if memory is None else min(memory, _memory(evaluation))
        if rule.in_use_option and number > 1:
            if in_use + rule.context_bytes >= memory:
                raise InputError("also", f"server {number}: the servers before it hold {size(in_use)} of each GPU's "
                                         f"{size(memory)}: nothing is left for {title(module.NAME)} to start in")
            values = dict(values, **{rule.in_use_option: Fraction(in_use + rule.context_bytes, GIB)})
            evaluation = _evaluated(values, number)
            scenario = evaluation.scenario
        share = _share(evaluation, module) if rule.share_of != "needs" else None
        if rule.share_of == "total":
            shares.append((number, share, module))
            _check_shares(shares, scenario)
        _check_starts(evaluation, number, in_use if rule.in_use_option else 0)
        held = _held(evaluation, module, rule)
        servers.append((number, values, evaluation, rule, share, in_use, held))
        in_use += held
    launched = _launches(servers)
    built = tuple(Server(*server, *command) for server, command in zip(servers, launched))
    return Colocation(built, _together(built, memory))


def _evaluated(values: dict, number: int) -> Evaluation:
    """The server's single view, or its own refusal prefixed with its number."""
    evaluation = evaluate(values)
    if evaluation.errors:
        e = evaluation.errors[0]
        # A shared input (the GPU count) is server 1's: a later server fixes its own instead.
        shared = f" ({e.field} is every server's, from server 1: set this server's own inputs to match it)" \
            if number > 1 and e.field in SHARED_KEYS else ""
        raise InputError(e.field if number == 1 else "also",
                         f"server {number}: " + (e.message if number == 1 else f"{e.field}: {e.message}{shared}"))
    if evaluation.result.gpu_memory_bytes is None:
        raise InputError("gpu", "servers sharing a GPU need its memory: give --gpu or --gpu-memory-gib")
    return evaluation


def _check_starts(evaluation: Evaluation, number: int, in_use: int = 0) -> None:
    """A server that does not start (its model too big for its share, or no request fits) is
    refused with its own verdict, naming it (and the memory the servers before it hold, where its
    share is of what they leave free)."""
    engine = evaluation.engine
    fails = engine.starts is False if engine is not None else evaluation.capacity == 0
    if fails:
        judged = verdict(evaluation.scenario, evaluation, str(evaluation.values.get("unit", "gib")))
        before = f" It was sized with the {size(in_use)} the servers before it hold in use: its share is of what " \
            "is free at its start." if in_use else ""
        raise InputError("memory-utilization" if number == 1 else "also", f"server {number} "
                         f"({evaluation.scenario.model.name}): {judged.sentence}{before}")


def _share(evaluation: Evaluation, module) -> Fraction:
    """The memory share in force (given, or the engine's default), a KV memory read from a log too."""
    share = memory_utilization(evaluation.scenario, evaluation.engine)
    return share if share is not None else module.memory_utilization(evaluation.scenario,
                                                                     evaluation.engine.prefill_chunk)


def _check_shares(shares: list, scenario) -> None:
    """The shares of the whole memory (vLLM's) add up to 1 at most: the server that takes them past
    1 is refused, with each share and the sum."""
    total = sum(share for _, share, _ in shares)
    if total <= 1:
        return
    number, share, module = shares[-1]
    terms = " + ".join(f"{float(s):g} (server {n})" for n, s, _ in shares)
    whose = "yours" if scenario.settings.utilization_given else \
        f"{title(module.NAME)} {releases.in_force(module, scenario.settings)}'s default"
    raise InputError("memory-utilization" if number == 1 else "also",
                     f"server {number}'s memory-utilization {float(share):g} ({whose}) takes the shares past 1: "
                     f"{terms} = {float(total):g}; {title(module.NAME)} gives each server its share of the whole "
                     "GPU's memory, so the shares of the servers beside each other add up to 1 at most")


def _memory(evaluation: Evaluation) -> int:
    """Each GPU's memory the servers share: as PyTorch reports it (what the engines multiply) where
    an engine sizes server 1, else the exact ideal's."""
    if evaluation.engine is None:
        return evaluation.result.gpu_memory_bytes
    return torch_total(evaluation.scenario.deployment, evaluation.scenario.settings, [])


def _held(evaluation: Evaluation, module, rule: Sharing) -> int:
    """What the server holds on each GPU once started: its share of what it measured (its usable
    memory) for an engine that takes a share, else what it needs (the memory bar's parts); and
    its CUDA context."""
    scenario, result = evaluation.scenario, evaluation.result
    if rule.share_of != "needs":
        usable = module.usable_memory(scenario, evaluation.engine.prefill_chunk, [], result.usable_bytes_per_gpu)
        return usable + rule.context_bytes
    bar = memory_bar(evaluation, scenario)
    parts = ("weights", "draft", "lora", "encoder", "kv", "overhead")
    needs = sum(bar.get(part) or 0 for part in parts)
    # The requests past what its memory utilization holds wait: it never holds more than that.
    return (needs if bar["usable"] is None else min(needs, bar["usable"])) + rule.context_bytes


def kv_bytes(server: Server) -> int | None:
    """Its cache per GPU as it runs beside the others: the KV memory its share leaves, or, for a
    server that holds what it needs, the cache it allocates (its own single view's budget would be
    the whole GPU, as if alone)."""
    if server.sharing.share_of != "needs":
        return server.evaluation.budget_bytes_per_gpu
    return memory_bar(server.evaluation, server.evaluation.scenario).get("kv")


def requests_held(server: Server) -> int | None:
    """The requests its cache holds at once: its single view's, and for a server that holds what it
    needs, no more than it was asked for (it allocates those, not the GPU's worth)."""
    capacity = server.evaluation.capacity
    if server.sharing.share_of == "needs" and capacity is not None:
        return min(capacity, server.evaluation.scenario.workload.batch)
    return capacity


def _launches(servers: list) -> list[tuple]:
    """(port, command, notes) per server: its engine's launch command, each on its own --port (the
    engine's default, then the next one free)."""
    taken, out = set(), []
    for _, _, evaluation, rule, _, _, _ in servers:
        engine = evaluation.engine
        if engine is None:
            out.append((None, None, ("the exact ideal is no engine: no launch command",)))
            continue
        try:
            command = launch(evaluation.scenario, engine.engine, sized_as(evaluation, engine.engine))
        except InputError as e:
            out.append((None, None, (f"not written: {e.message}",)))
            continue
        if command.command is None:
            out.append((None, None, tuple(f"not written: {note}" for note in command.notes[:1])))
            continue
        port = rule.port
        while port in taken:
            port += 1
        taken.add(port)
        out.append((port, f"{command.command} --port {port}", tuple(command.notes)))
    return out


def _together(servers: tuple[Server, ...], memory: int) -> Together:
    """Whether what the servers hold fits each GPU's memory, and the first server that does not."""
    held = sum(s.held_bytes for s in servers)
    notes = tuple(dict.fromkeys(s.sharing.words for s in servers if s.sharing.words))
    gpu = servers[0].evaluation.scenario.deployment.gpu
    each = f"each {gpu.name}" if gpu is not None else "each GPU"
    parts = " + ".join(f"{size(s.held_bytes)} (server {s.number})" for s in servers)
    if held <= memory:
        words = (f"They fit together on {each}: {parts} = {held:,} B ({size(held)}) held of its {memory:,} B "
                 f"({size(memory)}), {memory - held:,} B ({size(memory - held)}) left.")
        # Started together is not serving what each was asked: a server whose cache holds fewer
        # requests than its batch says so here too, not only in its own block.
        held_of = {s.number: requests_held(s) for s in servers}
        waiting = [s for s in servers if held_of[s.number] is not None
                   and held_of[s.number] < s.evaluation.scenario.workload.batch]
        words += "".join(f" Server {s.number} ({s.evaluation.scenario.model.name}) holds "
                         f"{plural(held_of[s.number], 'request')} of the {s.evaluation.scenario.workload.batch:,} "
                         "asked at once: the rest wait." for s in waiting)
        # A fraction of what is free leaves the server's CUDA graphs and activations in the rest,
        # unsized here: a server started after it finds that much less, so the fit is not sure.
        unsized = [s.number for s in servers[:-1] if s.sharing.share_of == "free"]
        if unsized:
            words += (f" Not counted: the CUDA graphs and activations of server{'s' * (len(unsized) > 1)} "
                      f"{listed([str(n) for n in unsized])}, in the memory its fraction leaves free, which the servers "
                      "started after it then do not find.")
        return Together(True, memory, held, None, words, notes, tuple(s.number for s in waiting))
    short = next(s for s in servers if s.in_use_bytes + s.held_bytes > memory)
    left = max(0, memory - short.in_use_bytes)
    check = " (its start-up check refuses: the memory free is under its share)" if short.sharing.start_check else ""
    words = (f"They do not fit together on {each}: server {short.number} ({short.evaluation.scenario.model.name}) "
             f"holds {size(short.held_bytes)} and {size(left)} is left beside the servers before it{check}; "
             f"{parts} = {size(held)} is {held - memory:,} B ({size(held - memory)}) past its {size(memory)}.")
    return Together(False, memory, held, short.number, words, notes)


def _label(server: Server) -> str:
    """"Llama 3.1 8B on vLLM 0.33.0, share 0.45" in short."""
    evaluation = server.evaluation
    engine = evaluation.engine
    if engine is None:
        how = "the exact ideal"
    else:
        module = REGISTRY[engine.engine]
        how = f"{module.TITLE} {releases.in_force(module, evaluation.scenario.settings)}"
    share = f", memory share {float(server.share):g}" if server.share is not None else ", what it needs"
    return f"{evaluation.scenario.model.name} on {how}{share}"


def to_text(colocation: Colocation, unit: str = "gib") -> str:
    """Each server in a short block (its label, its own verdict, its KV memory and what it holds
    on each GPU), the joint verdict, the launch commands one per server, the engines' rules."""
    lines = []
    for server in colocation.servers:
        evaluation = server.evaluation
        work = evaluation.scenario.workload
        judged = verdict(evaluation.scenario, evaluation, unit)
        capacity = requests_held(server)
        holds = "n/a" if capacity is None else plural(capacity, "request")
        lines += [f"Server {server.number}: {_label(server)}",
                  f"  Verdict     {judged.sentence}",
                  f"  KV memory   {size(kv_bytes(server), unit)} per GPU: holds {holds} of "
                  f"{work.context_tokens:,} tokens at once (asked {work.batch:,})",
                  f"  Holds       {size(server.held_bytes, unit)} per GPU once started"
                  + (f" (with {size(server.in_use_bytes, unit)} in use before it)" if server.number > 1 else ""),
                  ""]
    together = colocation.together
    lines += [f"Together: {together.words}", "", "Launch, one command per server:"]
    for server in colocation.servers:
        lines.append(f"  {server.command}" if server.command else
                     f"  # server {server.number}: {server.command_notes[0] if server.command_notes else 'none'}")
    lines += [""] + [f"# {note}" for note in together.notes]
    return "\n".join(lines) + "\n"


def to_json(colocation: Colocation, unit: str = "gib") -> dict:
    """{servers: [each server's own single-view JSON with its share, what it holds, its port and
    command], together: {fits, words, ...}}."""
    servers = []
    for s in colocation.servers:
        own = single_json(s.evaluation.scenario, s.evaluation, unit)
        servers.append({"server": s.number, "inputs": {k: str(v) for k, v in s.values.items()},
                        "share": None if s.share is None else str(s.share), "share_of": s.sharing.share_of,
                        "in_use_at_start_bytes_per_gpu": s.in_use_bytes, "held_bytes_per_gpu": s.held_bytes,
                        "port": s.port, "launch": s.command, "launch_notes": list(s.command_notes), **own})
    t = colocation.together
    return {"servers": servers,
            "together": {"fits": t.fits, "words": t.words, "memory_bytes_per_gpu": t.memory_bytes,
                         "held_bytes_per_gpu": t.held_bytes, "left_bytes_per_gpu": t.left_bytes,
                         "short_server": t.short_server, "waiting_servers": list(t.waiting),
                         "notes": list(t.notes)}}
