"""The plan's last phase: its rows in order (fitting first, then fewer GPUs, cheaper, more
requests held), the two rows a plan names (the fewest GPUs and the cheapest) and the notes on
what it assumed or left out.

Worked example (tests/planning/test_cheapest.py): Qwen3-235B-A22B at 10 requests/s, 1,024 output
tokens, with H100 at $2.49, H200 at $3.50 and MI300X at $2.20 per GPU-hour. The fewest GPUs is
4 x MI355X, unpriced; the cheapest is 8 x MI300X at $17.60/hour, ahead of 8 x H200 ($28.00) and
16 x H100 ($39.84): $17.60 over the 10 x 1,024 tokens/s all serve, $0.477 per million.
"""

from dataclasses import dataclass
from fractions import Fraction

from ..readers import gpu_presets
from .ask import Ask
from .rows import Row, as_decimal, usd_per_million_tokens


@dataclass(frozen=True)
class Plan:
    rows: tuple[Row, ...]
    notes: tuple[str, ...]
    everything: bool                          # every deployment, not only the smallest per GPU type
    # At a rate: what every fitting row serves, rate x output tokens per second. None: no rate.
    served_tokens_per_s: Fraction | None = None

    @property
    def fewest(self) -> Row | None:
        """The first fitting row: the fewest GPUs (the order's first key after fitting)."""
        return next((row for row in self.rows if row.fits), None)

    @property
    def best(self) -> Row | None:
        return self.fewest

    @property
    def cheapest_by(self) -> str:
        """What "cheapest" is said in: $/M tokens served at a rate, else $/hour."""
        return "usd_per_million_tokens_served" if self.served_tokens_per_s else "usd_per_hour"

    @property
    def cheapest(self) -> Row | None:
        """The fitting priced row with the least $/hour; a tie goes to the row first in the plan's
        order (fewer GPUs). At a rate every fitting row serves the same tokens, so the least per
        hour is the least per token served (a row's decode bound, batch / step, overshoots the
        rate by Little's law's rounding, which must not pick among rows of one price). None when
        no priced row fits."""
        costs = [(row.usd_per_hour, i) for i, row in enumerate(self.rows) if row.fits and row.usd_per_hour is not None]
        return self.rows[min(costs)[1]] if costs else None

    def usd_per_million_tokens_served(self, row: Row) -> Fraction | None:
        """The row's hour over the tokens it serves in one at the plan's rate, per million."""
        return usd_per_million_tokens(row.usd_per_hour, self.served_tokens_per_s)


def finish(ask: Ask, rows: list, everything: bool = False) -> Plan:
    """The plan of these rows: in order (_order), with its notes."""
    ordered = tuple(sorted(rows, key=_order(ask)))
    served = None if ask.rate is None or ask.output_tokens is None else ask.rate * ask.output_tokens
    return Plan(ordered, _notes(ask) + _cheapest_notes(ask, ordered), everything, served)


def _notes(ask: Ask) -> tuple[str, ...]:
    """What the plan assumed or left out: no prices, Little's law at a rate, the inputs of one
    deployment dropped, prices for GPUs it does not consider."""
    notes = []
    if not ask.prices:
        notes.append("no prices given: add what you pay per GPU-hour (prices, or --price GPU=USD) for $/hour and "
                     "$/million tokens")
    if ask.rate is not None:
        notes.append(f"concurrency from Little's law at {as_decimal(ask.rate)} requests/s and {ask.output_tokens:,} output "
                     "tokens each: a lower bound, from the time bounds (queueing and scheduling only add)")
    if ask.dropped:
        notes.append(f"left out, as they belong to one deployment: {', '.join(ask.dropped)}")
    # Named as typed: "H100=2.49" with only the SXM considered prices the PCIe and NVL unused,
    # which is no news; a name none of whose presets is considered is.
    name = {gpu_id: ask.price_names.get(gpu_id, gpu_id) for gpu_id in ask.prices}
    used = {name[gpu_id] for gpu_id in ask.prices if gpu_id in ask.gpus}
    unused = dict.fromkeys(name[gpu_id] for gpu_id in ask.prices if name[gpu_id] not in used)
    if unused:
        notes.append(f"prices for GPUs the plan does not consider: {', '.join(unused)}")
    # A whole GPU's price never prices its MIG instances (a family's name covers whole GPUs only).
    unpriced = [gpu_id for gpu_id in ask.gpus if gpu_id not in ask.prices
                and gpu_presets.gpu(gpu_id).mig_of in ask.prices]
    if unpriced:
        notes.append(f"unpriced MIG instances: {', '.join(unpriced)} (a whole GPU's price does not price its "
                     "instances; give each its own, e.g. \"H100 3g.40gb=1.20\")")
    return tuple(notes)


def _cheapest_notes(ask: Ask, rows: tuple[Row, ...]) -> tuple[str, ...]:
    """Why the plan names no cheapest row though prices were given: rows fit, none of them priced."""
    fitting = [row for row in rows if row.fits]
    if not ask.prices or not fitting or any(row.usd_per_hour is not None for row in fitting):
        return ()
    return ("no fitting row has a price, so none is named cheapest: price a GPU of a row that fits",)


def _order(ask: Ask):
    """Fitting rows first; then fewer GPUs, then cheaper (priced before unpriced), then more
    requests held; then the GPU types and precisions in the order asked, fewer stages, wider tp."""
    rank = {gpu_id: i for i, gpu_id in enumerate(ask.gpus)}

    def key(row: Row):
        price = row.usd_per_hour
        return (not row.fits, row.gpus, price is None, price or 0, -(row.max_concurrency or 0), rank.get(row.gpu, 0),
                _index(ask.weights_dtypes, row.weights_dtype), _index(ask.kv_dtypes, row.kv_dtype),
                row.layout.pp, -row.layout.tp, row.layout.dp, row.layout.ep)
    return key


def _index(names: tuple, name) -> int:
    return names.index(name) if name in names else 0
