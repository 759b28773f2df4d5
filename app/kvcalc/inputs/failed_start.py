"""A failed start read from its log: which rule refused, in the engine's words and ours, by how
much, and the inputs it ran with (reports/fixes then computes the changes that start it).

Each engine's words are its own (engines/<engine>/failures.py: RULES, PHASE_MARKS, MARKS);
torch's out-of-memory line is shared (readers/failure_rules). What it answers:
- one failure: its kind, phase and figures;
- none: "no start-up failure found";
- an error that is not about memory (a missing file, a gated repo): said so, with its line;
- two different failures (two starts pasted together): said so, neither guessed at.
One failure printed by several workers (each tp rank's out-of-memory line) is one failure."""

from dataclasses import dataclass, replace

from .. import engines
from ..readers.failure_rules import KINDS as KINDS_SAID, Failure, OtherError, figures_of, host_oom, other_error, torch_oom, with_shortfall

# A start fails at its end: its error, its traceback and the lines before it are the log's last
# lines. The page and the CLI read the same tail, so they answer a long log alike.
TAIL_CHARS = 256 << 10


@dataclass(frozen=True)
class FailedStart:
    failure: Failure | None
    engine: str | None
    message: str                    # the plain sentence: what failed, or why nothing was read
    others: tuple = ()              # further failures of another kind (two starts in one log)
    other_error: OtherError | None = None

    @property
    def read(self) -> bool:
        return self.failure is not None and not self.others


def _modules() -> list:
    return list(engines.failure_readers())


def _engine_of(lines: list, modules: list) -> str | None:
    """The engine whose marks the log carries most."""
    counts = {name: sum(1 for line in lines if any(mark in line for mark in module.MARKS)) for name, module in modules}
    best = max(counts.items(), key=lambda item: item[1], default=(None, 0))
    return best[0] if best[1] else None


def _phase(module, lines: list, before: int) -> str | None:
    phase = None
    for line in lines[:before]:
        for mark, begins in module.PHASE_MARKS:
            if mark in line:
                phase = begins
    return phase


def read(text: str, engine: str | None = None, first_line: int | None = None) -> FailedStart:
    """The failure `text` shows (`engine`: the engine the user named, or None to tell it from the
    log). Only its last TAIL_CHARS are read; `first_line` is the number of the first line given
    (the page passes the tail it cut), else counted here."""
    cut = max(0, len(text) - TAIL_CHARS)
    if cut:
        cut = text.find("\n", cut - 1) + 1 or len(text)
    offset = (first_line - 1) if first_line is not None else text.count("\n", 0, cut)
    lines = text[cut:].splitlines()
    modules = _modules()
    found, errors, started = _scan(lines, modules, offset)
    named = {f.engine for f in found if f.engine is not None}
    who = engine if engine is not None else (named.pop() if len(named) == 1 else _engine_of(lines, modules))
    module = dict(modules).get(who)
    # An error after the server said it was up is not a start's: it failed while serving.
    up = max((n for name, n in started if name == who), default=0)
    late = [f for f in found if f.line_number < up] if up else found
    if up and found and not late:
        return FailedStart(None, who, f"no start-up failure found: the server started (line {up:,}); the error at "
                                      f"line {found[0].line_number:,} came after, while it served")
    failures = [_placed(f, who, module, lines, offset) for f in _merged(late)]
    if not failures:
        if errors:
            first = errors[0]
            return FailedStart(None, who, f"this failure is not about memory: line {first.line_number:,} printed "
                                          f"{first.printed!r}", other_error=first)
        return FailedStart(None, who, "no start-up failure found: the log shows no error of a start "
                                      "(paste the lines up to and with the error)")
    first, rest = failures[0], tuple(failures[1:])
    if rest:
        said = "; ".join(f"line {f.line_number:,}: {f.printed[:120]!r}" for f in failures[:3])
        return FailedStart(first, who, f"this log holds {len(failures)} different failures, as from more than one "
                                       f"start ({said}): paste the log of one start", rest)
    return FailedStart(first, who, first.words)


def _scan(lines: list, modules: list, offset: int) -> tuple:
    """(the failures, the other errors, (engine, line) of each "server is up" line), numbered
    from `offset` + 1."""
    found, errors, started = [], [], []
    for index, line in enumerate(lines):
        number, own = offset + index + 1, False
        # A message wrapped over lines (a terminal's width): read with the next two lines joined.
        joined = " ".join([line.rstrip(), *(more.strip() for more in lines[index + 1:index + 3])])
        for name, module in modules:
            if any(mark in line for mark in module.STARTED_MARKS):
                started.append((name, number))
            for rule in module.RULES:
                if rule.needle and rule.needle not in joined:
                    continue
                match = rule.pattern.search(joined)
                if match is not None and match.start() >= len(line.rstrip()):
                    continue        # the next line's own: read there
                if match is not None:
                    found.append(Failure(name, rule.kind, number, line.strip()[:300], figures_of(match), rule.phase))
                    own = True
                    break
        oom, host = torch_oom(joined, len(line.rstrip())), host_oom(line)
        if oom is not None:
            found.append(Failure(None, "out-of-memory", number, line.strip()[:300], oom))
        elif host is not None and not own:
            found.append(Failure(None, "host-memory", number, line.strip()[:300], host))
        elif not own:
            error = other_error(line)
            if error is not None:
                errors.append(OtherError(number, error))
    return found, errors, started


def _placed(failure: Failure, engine: str | None, module, lines: list, offset: int) -> Failure:
    """A failure with its engine and, where the engine's line did not name it, its phase."""
    phase = failure.phase
    # A check's refusal (the KV cache too small, too few blocks) has no phase: only what ran out does.
    if phase is None and module is not None and failure.kind in ("out-of-memory", "buffer"):
        phase = _phase(module, lines, failure.line_number - 1 - offset)
    return replace(failure, engine=failure.engine or engine, phase=phase, figures=with_shortfall(failure.figures))


def _merged(failures: list) -> list:
    """One failure per event: torch's out-of-memory figures join the engine's own words for it
    (its line and the phase it names stand), and each tp rank's copy of one error is one. Two of
    a kind whose printed figures differ (another context, other blocks) are two starts."""
    out: list[Failure] = []
    for failure in failures:
        same = next((f for f in out if f.kind == failure.kind and _agree(f, failure)), None)
        if same is None:
            out.append(failure)
            continue
        figures = dict(failure.figures)
        figures.update(dict(same.figures))      # the first one's figures stand; the other fills gaps
        words = failure if same.engine is None and failure.engine is not None else same
        out[out.index(same)] = replace(words, figures=tuple(figures.items()), phase=same.phase or failure.phase)
    return out


# Figures that differ between the copies of one failure: each rank's device and what it had free.
RANK_FIGURES = ("device", "free_gib", "short_gib", "allocated_gib")


def _agree(a: Failure, b: Failure) -> bool:
    if a.kind == "out-of-memory" or a.kind == "buffer":
        return True         # every rank, every allocator's line of one running out
    one, two = dict(a.figures), dict(b.figures)
    return all(one[name] == two[name] for name in one.keys() & two.keys() if name not in RANK_FIGURES)
